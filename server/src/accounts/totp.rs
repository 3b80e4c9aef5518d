//! Time-based one-time codes (RFC 6238 over RFC 4226's HOTP) and recovery codes: the secret,
//! its `otpauth://` URI, checking a code with one step of clock skew either way, and making and
//! hashing recovery codes. Pure functions; storing and replay checks are `two_factor`'s.
//!
//! Implemented here over `hmac` + `sha1` (about forty lines, tested against the RFC's vectors)
//! rather than with a TOTP crate: those pull in their own base32, URL and QR stacks we do not need.

use data_encoding::BASE32_NOPAD;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use subtle::ConstantTimeEq;

/// Seconds per time step: what every authenticator app uses.
pub const STEP_SECONDS: u64 = 30;
/// Digits of a code.
pub const DIGITS: u32 = 6;
/// Steps accepted either side of the current one, for clocks that drift or a code typed late.
pub const SKEW_STEPS: u64 = 1;
/// Bytes of a secret: 160 bits, the HMAC-SHA-1 block size RFC 4226 recommends.
const SECRET_BYTES: usize = 20;
/// How many recovery codes a user gets.
pub const RECOVERY_CODES: usize = 10;
/// Characters of a recovery code (shown as two groups of five); 50 random bits each.
const RECOVERY_CHARS: usize = 10;
/// The issuer shown in authenticator apps.
const ISSUER: &str = "Porch";

/// A TOTP shared secret.
#[derive(Clone)]
pub struct TotpSecret(Vec<u8>);

impl std::fmt::Debug for TotpSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TotpSecret(…)")
    }
}

impl TotpSecret {
    /// A new random secret.
    pub fn generate() -> Self {
        Self(rand::random::<[u8; SECRET_BYTES]>().to_vec())
    }

    /// A secret as stored.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The bytes to store.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Base32 without padding, in groups of four, for typing into an app by hand.
    pub fn to_display(&self) -> String {
        let text = BASE32_NOPAD.encode(&self.0);
        let groups: Vec<&str> = text
            .as_bytes()
            .chunks(4)
            .filter_map(|c| std::str::from_utf8(c).ok())
            .collect();
        groups.join(" ")
    }

    /// The `otpauth://` URI an authenticator app reads from the QR code (Key Uri Format).
    pub fn uri(&self, email: &str) -> String {
        let label: String = email
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.~@".contains(&b) {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        format!(
            "otpauth://totp/{ISSUER}:{label}?secret={}&issuer={ISSUER}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}",
            BASE32_NOPAD.encode(&self.0)
        )
    }

    /// The code for time step `step` (RFC 4226 HOTP with `step` as the counter).
    pub fn code_at(&self, step: u64) -> String {
        format!(
            "{:0width$}",
            hotp(&self.0, step, DIGITS),
            width = DIGITS as usize
        )
    }

    /// The time step `code` belongs to, if it is the code of the step of `unix_seconds` or of
    /// one step either side, and that step is later than `after` (the last step used: a code
    /// is good once).
    pub fn matching_step(&self, code: &str, unix_seconds: u64, after: Option<u64>) -> Option<u64> {
        let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        if code.len() != DIGITS as usize || !code.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let now = unix_seconds / STEP_SECONDS;
        (now.saturating_sub(SKEW_STEPS)..=now + SKEW_STEPS)
            .filter(|step| after.is_none_or(|used| *step > used))
            .find(|step| bool::from(self.code_at(*step).as_bytes().ct_eq(code.as_bytes())))
    }
}

/// RFC 4226 §5.3: HMAC-SHA-1 of the counter, dynamic truncation, the last `digits` digits.
fn hotp(key: &[u8], counter: u64, digits: u32) -> u32 {
    // HMAC takes keys of any length, so this cannot fail; an empty MAC would give code 0.
    let Ok(mut mac) = Hmac::<Sha1>::new_from_slice(key) else {
        return 0;
    };
    mac.update(&counter.to_be_bytes());
    let hash = mac.finalize().into_bytes();
    let offset = usize::from(hash[19] & 0x0f);
    let value = u32::from_be_bytes([
        hash[offset] & 0x7f,
        hash[offset + 1],
        hash[offset + 2],
        hash[offset + 3],
    ]);
    value % 10u32.pow(digits)
}

/// Makes a new set of recovery codes, as shown to the user (`abcde-fghij`).
pub fn new_recovery_codes() -> Vec<String> {
    // No 0/o, 1/l/i: codes are copied by hand from paper.
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    (0..RECOVERY_CODES)
        .map(|_| {
            let chars: String = (0..RECOVERY_CHARS)
                .map(|_| char::from(ALPHABET[rand::random_range(0..ALPHABET.len())]))
                .collect();
            format!("{}-{}", &chars[..5], &chars[5..])
        })
        .collect()
}

/// A recovery code as typed, reduced to what counts (case, spaces and dashes do not).
pub fn normalize_recovery_code(code: &str) -> String {
    code.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// True if `code` looks like a one-time code (digits) rather than a recovery code.
pub fn is_one_time_code(code: &str) -> bool {
    let digits = code.chars().filter(|c| !c.is_whitespace());
    let mut count = 0;
    for c in digits {
        if !c.is_ascii_digit() {
            return false;
        }
        count += 1;
    }
    count == DIGITS as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 Appendix B, SHA-1 rows: the ASCII key "12345678901234567890", 8 digits.
    #[test]
    fn the_rfc_6238_sha1_test_vectors_hold() {
        let key = b"12345678901234567890";
        for (time, expected) in [
            (59_u64, 94_287_082_u32),
            (1_111_111_109, 7_081_804),
            (1_111_111_111, 14_050_471),
            (1_234_567_890, 89_005_924),
            (2_000_000_000, 69_279_037),
            (20_000_000_000, 65_353_130),
        ] {
            assert_eq!(hotp(key, time / STEP_SECONDS, 8), expected, "T = {time}");
        }
    }

    #[test]
    fn six_digit_codes_are_the_last_six_digits_zero_padded() {
        let secret = TotpSecret::from_bytes(b"12345678901234567890".to_vec());
        assert_eq!(secret.code_at(1_111_111_109 / STEP_SECONDS), "081804");
    }

    #[test]
    fn a_code_matches_one_step_either_side_and_not_two() {
        let secret = TotpSecret::generate();
        let now = 1_700_000_000;
        let step = now / STEP_SECONDS;
        for (delta, expected) in [(0, true), (1, true), (-1, true), (2, false), (-2, false)] {
            let code = secret.code_at(step.saturating_add_signed(delta));
            assert_eq!(
                secret.matching_step(&code, now, None).is_some(),
                expected,
                "delta {delta}"
            );
        }
    }

    #[test]
    fn a_code_of_a_used_step_does_not_match_again() {
        let secret = TotpSecret::generate();
        let now = 1_700_000_000;
        let step = now / STEP_SECONDS;
        let code = secret.code_at(step);
        assert_eq!(secret.matching_step(&code, now, None), Some(step));
        assert_eq!(secret.matching_step(&code, now, Some(step)), None);
        assert_eq!(secret.matching_step("12a456", now, None), None);
    }

    #[test]
    fn the_uri_names_issuer_account_and_parameters() {
        let secret = TotpSecret::from_bytes(b"12345678901234567890".to_vec());
        assert_eq!(
            secret.uri("ana+x@example.com"),
            "otpauth://totp/Porch:ana%2Bx@example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\
             &issuer=Porch&algorithm=SHA1&digits=6&period=30"
        );
        assert_eq!(
            secret.to_display(),
            "GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ"
        );
    }

    #[test]
    fn recovery_codes_are_ten_distinct_and_normalize_from_what_people_type() {
        let codes = new_recovery_codes();
        let unique: std::collections::HashSet<_> = codes.iter().collect();
        assert_eq!(unique.len(), RECOVERY_CODES);
        assert!(
            codes
                .iter()
                .all(|c| c.len() == 11 && c.as_bytes()[5] == b'-')
        );
        assert_eq!(normalize_recovery_code(" ABCDE-fghjk "), "abcdefghjk");
        assert!(is_one_time_code("123 456"));
        assert!(!is_one_time_code("abcde-fghjk"));
    }
}

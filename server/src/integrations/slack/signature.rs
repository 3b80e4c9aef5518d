//! Slack request signing (`v0`): HMAC-SHA256 over `v0:{timestamp}:{raw body}` with the app's
//! signing secret, compared in constant time, within five minutes of now.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Requests older or newer than this are refused (replay protection).
const MAX_SKEW_SECS: i64 = 5 * 60;

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("missing or malformed signature headers")]
    Missing,
    #[error("the request timestamp is more than five minutes away from now")]
    Stale,
    #[error("the signature does not match")]
    Mismatch,
}

/// The `X-Slack-Signature` value for a body sent at `timestamp` (Unix seconds).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// Checks a request's `X-Slack-Request-Timestamp` and `X-Slack-Signature` against the raw body.
pub fn verify(
    secret: &str,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now_secs: i64,
) -> Result<(), SignatureError> {
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else {
        return Err(SignatureError::Missing);
    };
    let timestamp: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| SignatureError::Missing)?;
    // `abs_diff`: the header is anyone's to write, and `i64::MIN` would overflow a subtraction.
    if now_secs.abs_diff(timestamp) > MAX_SKEW_SECS.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    let expected = sign(secret, timestamp, body);
    if bool::from(expected.as_bytes().ct_eq(signature.trim().as_bytes())) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_only_fresh_correct_signatures() {
        let body = br#"{"type":"event_callback"}"#;
        let signature = sign("secret", 1_000_000, body);
        assert_eq!(
            verify("secret", Some("1000000"), Some(&signature), body, 1_000_100),
            Ok(())
        );
        assert_eq!(
            verify("other", Some("1000000"), Some(&signature), body, 1_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(
                "secret",
                Some("1000000"),
                Some(&signature),
                b"{}",
                1_000_100
            ),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify("secret", Some("1000000"), Some(&signature), body, 1_000_301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify("secret", None, Some(&signature), body, 1_000_000),
            Err(SignatureError::Missing)
        );
        // Extreme timestamps, before any secret is needed, are stale, not a panic.
        for extreme in [i64::MIN, i64::MAX] {
            assert_eq!(
                verify(
                    "secret",
                    Some(&extreme.to_string()),
                    Some("v0=0"),
                    body,
                    1_000_000
                ),
                Err(SignatureError::Stale)
            );
        }
    }

    #[test]
    fn matches_slacks_documented_example() {
        // The example from Slack's "Verifying requests from Slack" page.
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        assert_eq!(
            sign("8f742231b10e8888abcd99yyyzzz85a5", 1_531_420_618, body),
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
        );
    }
}

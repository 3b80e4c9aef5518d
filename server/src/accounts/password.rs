//! Passwords: the length rule and argon2id hashing, shared by the admin UI and `porch user add`.
//! Hashing is deliberately slow (tens of milliseconds); call it off the async threads.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, SaltString};
use argon2::{Argon2, PasswordHasher, PasswordVerifier};

use crate::chat::Invalid;

/// Shortest password accepted. Length beats composition rules (NIST SP 800-63B).
pub const MIN_PASSWORD_CHARS: usize = 10;
/// Longest password accepted, so nobody makes the server hash megabytes.
const MAX_PASSWORD_CHARS: usize = 256;

/// A password that meets the length rule. Never logged (no `Debug` of the content).
pub struct Password(String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Password(..)")
    }
}

impl Password {
    /// Accepts 10 to 256 characters; white space is kept (it is part of the secret).
    pub fn parse(raw: &str) -> Result<Self, Invalid> {
        let chars = raw.chars().count();
        if chars < MIN_PASSWORD_CHARS {
            return Err(Invalid::from(
                "The password must have at least 10 characters.",
            ));
        }
        if chars > MAX_PASSWORD_CHARS {
            return Err(Invalid::from(
                "The password must have at most 256 characters.",
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The argon2id PHC string for a password (random salt, the crate's default cost).
///
/// # Errors
/// Only if the hasher rejects its own parameters, which would be a bug.
pub fn hash_password(password: &Password) -> Result<String, argon2::password_hash::Error> {
    let salt = SaltString::generate(&mut OsRng);
    Ok(Argon2::default()
        .hash_password(password.0.as_bytes(), &salt)?
        .to_string())
}

/// True if `candidate` matches the stored PHC string. An unparsable hash never matches.
pub fn verify_password(stored: &str, candidate: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|hash| {
        Argon2::default()
            .verify_password(candidate.as_bytes(), &hash)
            .is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_only_its_password() {
        let password = Password::parse("correct horse battery").expect("long enough");
        let hash = hash_password(&password).expect("hashes");
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password(&hash, "correct horse battery"));
        assert!(!verify_password(&hash, "correct horse battery!"));
        assert!(!verify_password("not a hash", "x"));
    }

    #[test]
    fn short_passwords_are_refused() {
        assert!(Password::parse("short").is_err());
        assert!(Password::parse("ten chars!").is_ok());
    }
}

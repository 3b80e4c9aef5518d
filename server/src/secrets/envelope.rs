//! The sealed form of a value: `v1:<key id>:<nonce>:<ciphertext>`, the nonce (24 random bytes)
//! and the ciphertext (with its 16-byte Poly1305 tag) in unpadded URL-safe base64. The version
//! leaves room for another cipher; the key id lets rotation and start-up tell which key sealed a
//! value. The associated data binds a value to its owner: moved to another row, it fails to open.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, Payload};
use chacha20poly1305::{Key, KeyInit, XChaCha20Poly1305, XNonce};

use super::SecretKey;

/// The envelope's version prefix.
const V1: &str = "v1";
/// Bytes in an `XChaCha20` nonce: large enough to pick at random for every value.
const NONCE_BYTES: usize = 24;

/// A value as stored: sealed (`v1:…`), or clear text from before sealing existed, which only the
/// start-up upgrade reads. `Debug` never prints the text.
#[derive(Clone, PartialEq, Eq)]
pub struct Sealed(String);

/// Why a value could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("the value is not sealed")]
    NotSealed,
    #[error("the value was sealed with key {sealed_with}, not with key {key}")]
    OtherKey { sealed_with: String, key: String },
    #[error("the value does not open: altered, or moved from another owner")]
    Broken,
}

impl Sealed {
    /// The text of a stored value, as read from the database.
    pub fn from_stored(text: String) -> Self {
        Self(text)
    }

    /// The text to store.
    pub fn as_stored(&self) -> &str {
        &self.0
    }

    /// Whether the value is in a sealed envelope (not clear text from an older version).
    pub fn is_sealed(&self) -> bool {
        self.parts().is_some()
    }

    /// The id of the key that sealed it.
    pub fn key_id(&self) -> Option<&str> {
        self.parts().map(|(id, _, _)| id)
    }

    fn parts(&self) -> Option<(&str, &str, &str)> {
        let mut parts = self.0.split(':');
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(V1), Some(id), Some(nonce), Some(body)) if parts.next().is_none() => {
                Some((id, nonce, body))
            }
            _ => None,
        }
    }
}

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.key_id() {
            Some(id) => write!(f, "Sealed(key {id})"),
            None => f.write_str("Sealed(<not sealed>)"),
        }
    }
}

fn cipher(key: &SecretKey) -> XChaCha20Poly1305 {
    XChaCha20Poly1305::new(Key::from_slice(key.bytes()))
}

/// Seals `clear` under `key` for the owner named by `owner` (the associated data).
///
/// # Errors
/// [`OpenError::Broken`] only if the cipher refuses the input (longer than it can take).
pub fn seal(key: &SecretKey, clear: &str, owner: &[u8]) -> Result<Sealed, OpenError> {
    let nonce: [u8; NONCE_BYTES] = rand::random();
    let body = cipher(key)
        .encrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: clear.as_bytes(),
                aad: owner,
            },
        )
        .map_err(|_| OpenError::Broken)?;
    Ok(Sealed(format!(
        "{V1}:{}:{}:{}",
        key.id(),
        URL_SAFE_NO_PAD.encode(nonce),
        URL_SAFE_NO_PAD.encode(body)
    )))
}

/// Opens a value sealed by [`seal`] with the same key and owner.
///
/// # Errors
/// [`OpenError::NotSealed`] for clear text, [`OpenError::OtherKey`] if another key sealed it,
/// [`OpenError::Broken`] if it was altered or belongs to another owner.
pub fn open(key: &SecretKey, sealed: &Sealed, owner: &[u8]) -> Result<String, OpenError> {
    let (id, nonce, body) = sealed.parts().ok_or(OpenError::NotSealed)?;
    if id != key.id() {
        return Err(OpenError::OtherKey {
            sealed_with: id.to_owned(),
            key: key.id().to_owned(),
        });
    }
    let nonce = URL_SAFE_NO_PAD
        .decode(nonce)
        .ok()
        .filter(|n| n.len() == NONCE_BYTES)
        .ok_or(OpenError::Broken)?;
    let body = URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|_| OpenError::Broken)?;
    let clear = cipher(key)
        .decrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: &body,
                aad: owner,
            },
        )
        .map_err(|_| OpenError::Broken)?;
    String::from_utf8(clear).map_err(|_| OpenError::Broken)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLEAR: &str = r#"{"bot_token":"xoxb-1234-secret"}"#;

    #[test]
    fn a_sealed_value_opens_with_its_key_and_owner_only() {
        let key = SecretKey::generate();
        let sealed = seal(&key, CLEAR, b"integration:1").unwrap();
        assert!(sealed.is_sealed());
        assert_eq!(sealed.key_id(), Some(key.id()));
        assert!(!sealed.as_stored().contains("xoxb"));
        assert_eq!(open(&key, &sealed, b"integration:1").unwrap(), CLEAR);
        assert_eq!(
            open(&key, &sealed, b"integration:2"),
            Err(OpenError::Broken)
        );
        let other = SecretKey::generate();
        assert!(matches!(
            open(&other, &sealed, b"integration:1"),
            Err(OpenError::OtherKey { .. })
        ));
    }

    #[test]
    fn each_seal_has_its_own_nonce() {
        let key = SecretKey::generate();
        let a = seal(&key, CLEAR, b"x").unwrap();
        let b = seal(&key, CLEAR, b"x").unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn an_altered_envelope_does_not_open() {
        let key = SecretKey::generate();
        let sealed = seal(&key, CLEAR, b"x").unwrap();
        let mut text = sealed.as_stored().to_owned();
        let last = text.pop().unwrap();
        text.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(
            open(&key, &Sealed::from_stored(text), b"x"),
            Err(OpenError::Broken)
        );
    }

    #[test]
    fn clear_text_is_not_sealed_and_debug_hides_it() {
        let clear = Sealed::from_stored(CLEAR.to_owned());
        assert!(!clear.is_sealed());
        assert_eq!(
            open(&SecretKey::generate(), &clear, b"x"),
            Err(OpenError::NotSealed)
        );
        assert!(!format!("{clear:?}").contains("xoxb"));
    }
}

//! The key that seals secrets: 32 random bytes, written as base64 or 64 hex digits, and its short
//! public id (stored in every envelope, so a wrong key is recognised before any cipher runs).

use std::io::Write as _;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};

/// The generated key's file in the data directory, used when no key is configured.
pub const KEY_FILE: &str = "secret.key";
/// Where `porch secrets rotate` puts a key it generated, until it replaces [`KEY_FILE`].
pub const NEW_KEY_FILE: &str = "secret.key.new";

/// Bytes in a key: 256 bits.
const KEY_BYTES: usize = 32;

/// A key that seals and opens secrets. `Debug` shows only its id.
#[derive(Clone)]
pub struct SecretKey {
    bytes: [u8; KEY_BYTES],
    /// First 8 hex digits of a SHA-256 over the key: names the key in envelopes and messages
    /// without revealing anything usable about it.
    id: String,
}

/// Why a key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "must be 32 bytes written as base64 (44 characters) or hex (64 digits), for example the \
         output of `openssl rand -base64 32`"
    )]
    Malformed,
    #[error("cannot be read ({path}: {source})")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot be written ({path}: {source})")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

impl SecretKey {
    fn from_bytes(bytes: [u8; KEY_BYTES]) -> Self {
        let digest = Sha256::new()
            .chain_update(b"porch secret key id\0")
            .chain_update(bytes)
            .finalize();
        let id = hex::encode(&digest[..4]);
        Self { bytes, id }
    }

    /// A key from its text form: 64 hex digits, or base64 (standard or URL-safe, padded or
    /// not) of exactly 32 bytes; surrounding white space is ignored.
    ///
    /// # Errors
    /// [`KeyError::Malformed`] for anything else.
    pub fn parse(text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let decoded = if text.len() == 2 * KEY_BYTES {
            hex::decode(text).ok()
        } else {
            None
        };
        let decoded = decoded.or_else(|| {
            [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
                .iter()
                .find_map(|engine| engine.decode(text).ok())
        });
        decoded
            .and_then(|bytes| <[u8; KEY_BYTES]>::try_from(bytes).ok())
            .map(Self::from_bytes)
            .ok_or(KeyError::Malformed)
    }

    /// A new random key.
    pub fn generate() -> Self {
        Self::from_bytes(rand::random())
    }

    /// The key's public id (8 hex digits).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key as standard base64, the form written to key files.
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.bytes)
    }

    pub(super) fn bytes(&self) -> &[u8; KEY_BYTES] {
        &self.bytes
    }

    /// Reads the key file at `path`.
    ///
    /// # Errors
    /// Fails if it cannot be read or does not hold a key.
    pub fn read_file(path: &Path) -> Result<Self, KeyError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeyError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// Writes the key to a new file readable by its owner only (mode 0600), flushed to disk
    /// before this returns; an existing file is never overwritten. The file appears whole or not
    /// at all: the key goes to a temporary file first, which is then renamed to `path` (so a full
    /// disk leaves no empty key file that would stop every later start). The caller holds the
    /// data directory's lock, so nothing else can create `path` between the check and the rename.
    ///
    /// # Errors
    /// Fails if the file exists or cannot be written.
    pub fn write_new_file(&self, path: &Path) -> Result<(), KeyError> {
        let io = |source| KeyError::Write {
            path: path.display().to_string(),
            source,
        };
        if path.exists() {
            return Err(io(std::io::ErrorKind::AlreadyExists.into()));
        }
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = std::path::PathBuf::from(partial);
        let written = self
            .write_partial(&partial)
            .and_then(|()| std::fs::rename(&partial, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        written.map_err(io)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io)?;
        }
        Ok(())
    }

    fn write_partial(&self, partial: &Path) -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(partial)?;
        writeln!(file, "{}", self.to_base64())?;
        file.sync_all()
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({})", self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_hex_of_32_bytes_parse_to_the_same_key() {
        let key = SecretKey::generate();
        let hex_text = hex::encode(key.bytes());
        let from_hex = SecretKey::parse(&hex_text).unwrap();
        let from_b64 = SecretKey::parse(&format!("{}\n", key.to_base64())).unwrap();
        let from_url = SecretKey::parse(&URL_SAFE_NO_PAD.encode(key.bytes())).unwrap();
        assert_eq!(from_hex.id(), key.id());
        assert_eq!(from_b64.id(), key.id());
        assert_eq!(from_url.id(), key.id());
    }

    #[test]
    fn short_long_and_garbled_keys_are_refused() {
        for text in [
            "",
            "secret",
            &STANDARD.encode([7u8; 16]),
            &STANDARD.encode([7u8; 33]),
            &"g".repeat(64),
        ] {
            assert!(SecretKey::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn debug_shows_only_the_id() {
        let key = SecretKey::generate();
        let printed = format!("{key:?}");
        assert_eq!(printed, format!("SecretKey({})", key.id()));
        assert!(!printed.contains(&key.to_base64()));
    }

    #[cfg(unix)]
    #[test]
    fn a_written_key_file_is_private_and_never_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(KEY_FILE);
        let key = SecretKey::generate();
        key.write_new_file(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(SecretKey::read_file(&path).unwrap().id(), key.id());
        assert!(SecretKey::generate().write_new_file(&path).is_err());
    }
}

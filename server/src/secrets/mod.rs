//! Sealing secrets at rest: the 256-bit key (parsed, generated, kept in the data directory) and
//! the versioned envelope, XChaCha20-Poly1305 with a random nonce per value and the owner's
//! identity as associated data. A leaf: it imports nothing from the crate, so the store can carry
//! a [`Sealed`] value without being able to open it.

mod envelope;
mod key;

pub use envelope::{OpenError, Sealed, open, seal};
pub use key::{KEY_FILE, KeyError, NEW_KEY_FILE, SecretKey};

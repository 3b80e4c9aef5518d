//! Sign-in attempts between the redirect to the provider and its callback: each holds the
//! `state`, `nonce` and PKCE verifier made for it and the page to return to. They are kept in
//! memory under a random id that only the browser that started the attempt has (its cookie), for
//! ten minutes, and taken once; a restart forgets them (the person starts again).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openidconnect::{CsrfToken, Nonce, PkceCodeVerifier};

/// How long a person has at the provider before the attempt is forgotten.
pub const ATTEMPT_LIFETIME: Duration = Duration::from_mins(10);
/// Most attempts kept at once. Starting one needs no account, so this bounds the memory a flood
/// of `/login/sso` requests can take; past it the oldest attempt is dropped.
const MAX_ATTEMPTS: usize = 10_000;

/// One attempt's secrets.
pub struct Pending {
    pub state: CsrfToken,
    pub nonce: Nonce,
    pub verifier: PkceCodeVerifier,
    /// Where to go after signing in (already checked to be a local path).
    pub next: String,
}

/// The attempts under way, by the SHA-256 of their id (the id itself is only in the cookie).
#[derive(Default)]
pub struct Attempts {
    pending: Mutex<HashMap<[u8; 32], (Instant, Pending)>>,
}

impl Attempts {
    /// Keeps `pending` and returns the new attempt's id.
    pub fn insert(&self, pending: Pending) -> String {
        let id = crate::accounts::new_secret();
        let now = Instant::now();
        if let Ok(mut map) = self.pending.lock() {
            map.retain(|_, (at, _)| now.duration_since(*at) < ATTEMPT_LIFETIME);
            if map.len() >= MAX_ATTEMPTS
                && let Some(oldest) = map.iter().min_by_key(|(_, (at, _))| *at).map(|(k, _)| *k)
            {
                map.remove(&oldest);
            }
            map.insert(crate::accounts::hash_secret(&id), (now, pending));
        }
        id
    }

    /// Takes the attempt with this id, if it exists and has not expired. Single use.
    pub fn take(&self, id: &str) -> Option<Pending> {
        let (at, pending) = self
            .pending
            .lock()
            .ok()?
            .remove(&crate::accounts::hash_secret(id))?;
        (at.elapsed() < ATTEMPT_LIFETIME).then_some(pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(next: &str) -> Pending {
        Pending {
            state: CsrfToken::new("state".into()),
            nonce: Nonce::new("nonce".into()),
            verifier: PkceCodeVerifier::new("verifier".into()),
            next: next.to_owned(),
        }
    }

    #[test]
    fn an_attempt_is_taken_once_and_only_by_its_id() {
        let attempts = Attempts::default();
        let id = attempts.insert(pending("/inbox"));
        assert!(attempts.take("another id").is_none());
        assert_eq!(
            attempts.take(&id).map(|p| p.next),
            Some("/inbox".to_owned())
        );
        assert!(attempts.take(&id).is_none());
    }

    #[test]
    fn a_flood_of_attempts_keeps_at_most_the_limit() {
        let attempts = Attempts::default();
        let first = attempts.insert(pending("/first"));
        for _ in 0..MAX_ATTEMPTS {
            attempts.insert(pending("/x"));
        }
        assert!(attempts.take(&first).is_none(), "the oldest is dropped");
        assert_eq!(attempts.pending.lock().map_or(0, |m| m.len()), MAX_ATTEMPTS);
    }
}

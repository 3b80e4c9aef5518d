//! Sign-in attempts between the redirect to the provider and its callback: each holds the
//! `state`, `nonce` and PKCE verifier made for it and the page to return to. They are kept in
//! memory under a random id that only the browser that started the attempt has (its cookie), for
//! ten minutes, and taken once; a restart forgets them (the person starts again). Anyone may
//! start one, so how many are held and how much each holds is bounded.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use openidconnect::{CsrfToken, Nonce, PkceCodeVerifier};

/// How long a person has at the provider before the attempt is forgotten.
pub const ATTEMPT_LIFETIME: Duration = Duration::from_mins(10);
/// Most attempts kept at once. Starting one needs no account, so this bounds the memory a flood
/// of `/login/sso` requests can take: each holds at most about 2.3 KB (a `next` of
/// [`MAX_NEXT_BYTES`], three short secrets, the map's entry), so 5,000 hold under 12 MB. A
/// small team starts a few dozen sign-ins in any ten minutes; past the limit the oldest attempt
/// is dropped, and its person, if real, is refused on return and clicks the button again.
const MAX_ATTEMPTS: usize = 5_000;
/// The longest `next` an attempt keeps. Pages of Porch have short paths and queries; a longer
/// `next` only inflates memory, and goes to the inbox instead, as an invalid one does.
const MAX_NEXT_BYTES: usize = 2_048;
/// Where an attempt whose `next` is too long leads.
const NEXT_INSTEAD: &str = "/inbox";

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
    /// Keeps `pending` (its `next` replaced by the inbox when longer than [`MAX_NEXT_BYTES`]) and
    /// returns the new attempt's id.
    pub fn insert(&self, mut pending: Pending) -> String {
        if pending.next.len() > MAX_NEXT_BYTES {
            // A new string: `clone_into` would keep the long one's memory.
            pending.next = String::from(NEXT_INSTEAD);
        }
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
    fn a_flood_of_attempts_keeps_at_most_the_limit_and_drops_the_oldest() {
        let attempts = Attempts::default();
        let first = attempts.insert(pending("/first"));
        let second = attempts.insert(pending("/second"));
        for _ in 0..MAX_ATTEMPTS - 1 {
            attempts.insert(pending("/x"));
        }
        assert_eq!(attempts.pending.lock().map_or(0, |m| m.len()), MAX_ATTEMPTS);
        assert!(attempts.take(&first).is_none(), "the oldest is dropped");
        assert_eq!(
            attempts.take(&second).map(|p| p.next),
            Some("/second".to_owned()),
            "the next oldest stays"
        );
    }

    #[test]
    fn a_next_longer_than_the_limit_leads_to_the_inbox() {
        let attempts = Attempts::default();
        let longest = format!("/{}", "a".repeat(MAX_NEXT_BYTES - 1));
        let kept = attempts.insert(pending(&longest));
        let too_long = attempts.insert(pending(&format!("{longest}b")));
        assert_eq!(attempts.take(&kept).map(|p| p.next), Some(longest));
        let replaced = attempts.take(&too_long).map(|p| p.next);
        assert_eq!(replaced.as_deref(), Some("/inbox"));
        let held = replaced.map_or(0, |next| next.capacity());
        assert!(
            held <= MAX_NEXT_BYTES,
            "the long next's memory is kept: {held}"
        );
    }
}

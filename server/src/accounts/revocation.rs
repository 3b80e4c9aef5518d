//! Ends the live streams (Server-Sent Events) of a session the moment it is revoked or expires.
//! A stream checks its session once, at connect; after that only this registry and the
//! session's expiry time can stop it, so every path that ends sessions (sign-out, password
//! change or reset, disable) calls in here. The cost lands on the rare revocation, not on each
//! event a stream sends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;
use crate::store::UserId;

struct Watched {
    user: UserId,
    token: CancellationToken,
    /// Open streams of this session; the entry goes when the last one does.
    streams: usize,
}

type Map = HashMap<[u8; 32], Watched>;

/// Open streams by session id hash.
#[derive(Default)]
pub struct Revocations {
    sessions: Arc<Mutex<Map>>,
}

/// Held by one open stream; `ended()` resolves when its session ends.
pub struct SessionWatch {
    sessions: Arc<Mutex<Map>>,
    id_hash: [u8; 32],
    token: CancellationToken,
    /// When the session expires (ms since the epoch); sessions have a fixed lifetime.
    expires_at: i64,
}

impl SessionWatch {
    /// The same watch, also ending when the session expires at `expires_at`.
    #[must_use]
    pub fn expiring_at(mut self, expires_at: i64) -> Self {
        self.expires_at = expires_at;
        self
    }

    /// Resolves once the session is revoked or has expired.
    pub async fn ended(&self) {
        let left = u64::try_from(self.expires_at.saturating_sub(now_ms())).unwrap_or(0);
        tokio::select! {
            () = self.token.cancelled() => {}
            () = tokio::time::sleep(Duration::from_millis(left)) => {}
        }
    }
}

impl Drop for SessionWatch {
    fn drop(&mut self) {
        let mut map = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watched) = map.get_mut(&self.id_hash) {
            watched.streams = watched.streams.saturating_sub(1);
            if watched.streams == 0 {
                map.remove(&self.id_hash);
            }
        }
    }
}

impl Revocations {
    /// Registers one stream of the session with this id hash (until it is revoked; see
    /// [`SessionWatch::expiring_at`] for its expiry).
    pub fn watch(&self, id_hash: [u8; 32], user: UserId) -> SessionWatch {
        let mut map = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        let watched = map.entry(id_hash).or_insert_with(|| Watched {
            user,
            token: CancellationToken::new(),
            streams: 0,
        });
        watched.streams += 1;
        SessionWatch {
            sessions: Arc::clone(&self.sessions),
            id_hash,
            token: watched.token.clone(),
            expires_at: i64::MAX,
        }
    }

    /// Ends the streams of one session.
    pub fn revoke_session(&self, id_hash: &[u8; 32]) {
        let map = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(watched) = map.get(id_hash) {
            watched.token.cancel();
        }
    }

    /// Ends the streams of every session of `user` except `keep`.
    pub fn revoke_user(&self, user: UserId, keep: Option<&[u8; 32]>) {
        let map = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        for (hash, watched) in map.iter() {
            if watched.user == user && Some(hash) != keep {
                watched.token.cancel();
            }
        }
    }

    /// How many sessions have open streams.
    #[cfg(test)]
    fn watched(&self) -> usize {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn revoking_a_user_ends_their_other_sessions_only() {
        let registry = Revocations::default();
        let (a, b, c) = ([1; 32], [2; 32], [3; 32]);
        let kept = registry.watch(a, UserId(1));
        let ended = registry.watch(b, UserId(1));
        let other = registry.watch(c, UserId(2));
        registry.revoke_user(UserId(1), Some(&a));
        ended.ended().await;
        assert!(!kept.token.is_cancelled());
        assert!(!other.token.is_cancelled());
        registry.revoke_session(&c);
        other.ended().await;
        drop((kept, ended, other));
        assert_eq!(registry.watched(), 0, "entries go with their last stream");
    }

    #[tokio::test]
    async fn a_stream_ends_when_its_session_expires() {
        let registry = Revocations::default();
        let watch = registry
            .watch([1; 32], UserId(1))
            .expiring_at(now_ms() + 400);
        let early = tokio::time::timeout(Duration::from_millis(100), watch.ended()).await;
        assert!(early.is_err(), "still running before the expiry");
        tokio::time::timeout(Duration::from_secs(5), watch.ended())
            .await
            .expect("ended at the expiry");
    }
}

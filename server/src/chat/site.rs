//! Sites as the widget sees them, and a short-lived in-memory directory of them so the hot path
//! does not read the database for every connection.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::refused_origins::{RefusedOrigin, RefusedOrigins};
use crate::secrets::Sealed;
use crate::store::{self, Readers, SiteId, SiteRow};
use crate::values::{Origin, PrechatForm, SiteHours, SiteLimits};

/// How long a looked-up site (or its absence) is trusted before it is read again; changes made
/// by another process (the CLI) show within this time.
const CACHE_TTL: Duration = Duration::from_secs(10);
/// Bound on cached "no such site" answers, so random keys cannot grow memory without limit.
const MAX_CACHED_MISSES: usize = 10_000;
/// Site changes a widget connection may fall behind by before it reads its site again itself.
/// Admins change sites by hand, a few a minute at most.
const CHANGES_BUFFER: usize = 16;

/// A site with its parsed allowed origins.
#[derive(Debug, Clone)]
pub struct Site {
    pub id: SiteId,
    pub key: String,
    pub name: String,
    pub greeting: String,
    /// Greetings in other languages by language code (docs/widget.md, "Languages").
    pub greetings: BTreeMap<String, String>,
    pub color: String,
    pub position: String,
    pub origins: Vec<Origin>,
    pub limits: SiteLimits,
    /// The sealed identity secret that verifies known visitors' `user_hash`; `None` when the
    /// site has not turned known visitors on. Opened only to check a hash.
    pub identity_secret: Option<Sealed>,
    /// Business hours; `None` when the site has none (always open).
    pub hours: Option<SiteHours>,
    /// The pre-chat form; `None` when the site has none.
    pub prechat: Option<PrechatForm>,
    /// Whether the site takes attachments (its `attachment_max_bytes` is not 0).
    pub takes_files: bool,
}

impl Site {
    /// Builds the domain view of a stored site; origins that no longer parse are skipped.
    pub fn from_row(row: SiteRow) -> Self {
        let settings = row.settings;
        Self {
            id: row.id,
            key: row.key,
            origins: settings
                .origins
                .iter()
                .filter_map(|o| Origin::parse(o).ok())
                .collect(),
            limits: settings.limits,
            name: settings.name,
            greeting: settings.greeting,
            greetings: settings.greetings,
            color: settings.color,
            position: settings.position,
            identity_secret: None,
            hours: None,
            prechat: None,
            takes_files: true,
        }
    }

    /// True if a page at `origin` (the browser's `Origin` header) may use this site's widget.
    pub fn allows_origin(&self, origin: &str) -> bool {
        Origin::parse(origin).is_ok_and(|o| self.origins.contains(&o))
    }
}

/// Site keys look like `s_` and 16 lower-case hex digits.
pub fn is_site_key(key: &str) -> bool {
    key.len() == 18
        && key.starts_with("s_")
        && key[2..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A new random site key.
pub fn new_site_key() -> String {
    let bytes: [u8; 8] = rand::random();
    let mut key = String::with_capacity(18);
    key.push_str("s_");
    for byte in bytes {
        let _ = write!(key, "{byte:02x}");
    }
    key
}

/// When a site (or its absence) was read, and what was found.
type CachedSite = (Instant, Option<Arc<Site>>);

/// A site as an admin just saved it, or `None` once it was deleted: open widget connections of
/// the site take it at once (docs/widget-protocol.md, "Connecting").
#[derive(Debug)]
pub struct SiteChange {
    pub key: String,
    pub site: Option<Arc<Site>>,
}

/// Cached lookups of sites by key, and the news of their changes.
pub struct SiteDirectory {
    readers: Arc<Readers>,
    cache: RwLock<HashMap<String, CachedSite>>,
    /// Origins refused the chat, shown on the site page.
    refused: RefusedOrigins,
    changes: broadcast::Sender<Arc<SiteChange>>,
    /// One reload at a time, so two quick saves are read and sent in the order they were made:
    /// the last news a connection takes is the site as it is.
    reloads: tokio::sync::Mutex<()>,
}

impl SiteDirectory {
    pub fn new(readers: Arc<Readers>) -> Self {
        Self {
            readers,
            cache: RwLock::new(HashMap::new()),
            refused: RefusedOrigins::default(),
            changes: broadcast::channel(CHANGES_BUFFER).0,
            reloads: tokio::sync::Mutex::new(()),
        }
    }

    /// The changes saved from now on, of every site (a connection skips the others').
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<SiteChange>> {
        self.changes.subscribe()
    }

    /// The site with this key, from the cache if fresh.
    pub async fn find(&self, key: &str) -> Result<Option<Arc<Site>>, store::Error> {
        if !is_site_key(key) {
            return Ok(None);
        }
        if let Ok(cache) = self.cache.read()
            && let Some((at, site)) = cache.get(key)
            && at.elapsed() < CACHE_TTL
        {
            return Ok(site.clone());
        }
        let owned = key.to_owned();
        let found = self
            .readers
            .read(move |c| {
                let Some(row) = store::find_site_by_key(c, &owned)? else {
                    return Ok(None);
                };
                let secret = store::find_site_identity_secret(c, row.id)?;
                let hours = store::find_site_hours(c, row.id)?;
                let prechat = store::find_site_prechat(c, row.id)?;
                let takes_files = store::find_attachment_limit(c, row.id)? > 0;
                Ok(Some((row, secret, (hours, prechat, takes_files))))
            })
            .await?;
        let site = found.map(|(row, identity_secret, (hours, prechat, takes_files))| {
            let hours = hours.and_then(|h| super::hours::parse_stored_hours(row.id, &h));
            Arc::new(Site {
                identity_secret,
                hours,
                prechat: prechat
                    .as_ref()
                    .and_then(super::prechat::parse_stored_prechat),
                takes_files,
                ..Site::from_row(row)
            })
        });
        if let Ok(mut cache) = self.cache.write() {
            let misses = cache.values().filter(|(_, s)| s.is_none()).count();
            if site.is_some() || misses < MAX_CACHED_MISSES {
                cache.insert(key.to_owned(), (Instant::now(), site.clone()));
            }
        }
        Ok(site)
    }
}

impl SiteDirectory {
    /// Reads a site just saved or deleted again, and tells the open connections: called after
    /// every change an admin makes to a site or what the widget reads with it (hours, pre-chat
    /// form, identity secret, attachment limit). A failed read leaves them with what they have; new connections
    /// read the site afresh either way.
    pub async fn reload(&self, key: &str) {
        let _one_at_a_time = self.reloads.lock().await;
        if let Ok(mut cache) = self.cache.write() {
            cache.remove(key);
        }
        match self.find(key).await {
            Ok(site) => {
                let change = SiteChange {
                    key: key.to_owned(),
                    site,
                };
                // An error only means no connection listens.
                let _ = self.changes.send(Arc::new(change));
            }
            Err(err) => tracing::warn!(error = %err, "a changed site could not be read again"),
        }
    }

    /// Notes that a page at `origin` was refused the chat of `site` (docs/widget.md,
    /// "Embedding"). A missing `Origin` (not a browser) is not a page and is not noted.
    pub fn note_refused_origin(&self, site: &Site, origin: &str) {
        if !origin.is_empty() {
            self.refused.note(site.id, origin, crate::clock::now_ms());
        }
    }

    /// The origins refused the chat of `site` in the last day since the server started, the
    /// latest first, without those the site allows by now.
    pub fn refused_origins(&self, site: &Site) -> Vec<RefusedOrigin> {
        let mut refused = self.refused.of(site.id, crate::clock::now_ms());
        refused.retain(|r| !site.allows_origin(&r.origin));
        refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_keys_are_valid_keys() {
        assert!(is_site_key(&new_site_key()));
        assert!(!is_site_key("s_XYZ"));
        assert!(!is_site_key("s_0123456789abcdeg"));
    }
}

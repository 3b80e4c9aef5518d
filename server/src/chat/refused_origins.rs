//! Origins whose pages the widget refused, per site, so the site page can say why the chat does
//! not open (the usual set-up slip: `www.` missing, `http` for `https`, a port). Kept in memory
//! only: it is a hint for the person setting up, lost on restart, and a refused connection must
//! cost no write. Bounded: a few origins per site. A program can send any `Origin`, so only what a
//! browser could send is noted (an `http`/`https` origin, or `null`), and a new origin takes the
//! place of the one refused least often: a stranger's one-off origins take turns in one place,
//! and the site's own misconfigured page, refused on every visit, stays listed. Counts do not
//! hold a place for ever: an origin not refused for a day is no longer listed and makes room
//! first, so a burst that stopped leaves the card within a day, not at the next restart.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::SiteId;

/// Origins remembered per site; the one refused least often (of those, longest ago) makes room
/// for a new one.
const PER_SITE: usize = 5;
/// An origin not refused for this long (milliseconds, a day) is no longer listed, and makes room
/// for a new one before any origin refused more recently, however often it was refused.
const STALE_AFTER_MS: i64 = 24 * 60 * 60 * 1000;
/// Longer `Origin` values are cut (a real origin is a scheme, a host and a port).
const MAX_ORIGIN_CHARS: usize = 200;

/// Whether a browser could have sent `origin`: `null` (a page opened from a file, a sandboxed
/// frame), or a parsable `http` or `https` origin.
fn is_browser_origin(origin: &str) -> bool {
    origin == "null" || crate::values::Origin::parse(origin).is_ok()
}

/// A refused origin: how often, and when last (Unix milliseconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedOrigin {
    pub origin: String,
    pub count: u64,
    pub last_ms: i64,
}

/// The refused origins of every site.
#[derive(Debug, Default)]
pub struct RefusedOrigins {
    by_site: Mutex<HashMap<SiteId, Vec<RefusedOrigin>>>,
}

impl RefusedOrigins {
    /// Notes that a page at `origin` was refused the chat of `site`.
    pub fn note(&self, site: SiteId, origin: &str, now_ms: i64) {
        if !is_browser_origin(origin) {
            return;
        }
        let origin: String = origin.chars().take(MAX_ORIGIN_CHARS).collect();
        let Ok(mut by_site) = self.by_site.lock() else {
            return;
        };
        let refused = by_site.entry(site).or_default();
        if let Some(known) = refused.iter_mut().find(|r| r.origin == origin) {
            known.count += 1;
            known.last_ms = now_ms;
            return;
        }
        let entry = RefusedOrigin {
            origin,
            count: 1,
            last_ms: now_ms,
        };
        if refused.len() < PER_SITE {
            refused.push(entry);
        } else if let Some(least) = refused
            .iter_mut()
            .min_by_key(|r| (now_ms - r.last_ms < STALE_AFTER_MS, r.count, r.last_ms))
        {
            *least = entry;
        }
    }

    /// The site's origins refused within a day of `now_ms`, the latest first.
    pub fn of(&self, site: SiteId, now_ms: i64) -> Vec<RefusedOrigin> {
        let mut refused = self
            .by_site
            .lock()
            .ok()
            .and_then(|by_site| by_site.get(&site).cloned())
            .unwrap_or_default();
        refused.retain(|r| now_ms - r.last_ms < STALE_AFTER_MS);
        refused.sort_by_key(|r| std::cmp::Reverse(r.last_ms));
        refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_origin_refused_again_is_counted_not_repeated() {
        let refused = RefusedOrigins::default();
        refused.note(SiteId(1), "https://example.com", 10);
        refused.note(SiteId(1), "https://example.com", 20);
        refused.note(SiteId(2), "https://other.example", 15);
        let site = refused.of(SiteId(1), 1000);
        assert_eq!(site.len(), 1);
        assert_eq!((site[0].count, site[0].last_ms), (2, 20));
        assert_eq!(refused.of(SiteId(3), 1000), Vec::new());
    }

    #[test]
    fn a_new_origin_replaces_the_one_refused_longest_ago_among_the_least_refused() {
        let refused = RefusedOrigins::default();
        for i in 0..=PER_SITE {
            let at = i64::try_from(i).unwrap_or_default();
            refused.note(SiteId(1), &format!("https://{i}.example"), 100 - at);
        }
        let origins: Vec<String> = refused
            .of(SiteId(1), 1000)
            .into_iter()
            .map(|r| r.origin)
            .collect();
        assert_eq!(origins.len(), PER_SITE);
        // The first was the latest; the fifth (at 96) was the oldest kept until the sixth came.
        assert_eq!(origins[0], "https://0.example");
        assert!(origins.contains(&"https://5.example".to_owned()));
        assert!(!origins.contains(&"https://4.example".to_owned()));
    }

    /// The site's own page, refused on every visit, is not pushed off the card by a flood of
    /// one-off origins from a program.
    #[test]
    fn origins_refused_often_stay_through_a_flood_of_new_ones() {
        let refused = RefusedOrigins::default();
        for at in 0..3 {
            refused.note(SiteId(1), "https://www.myshop.example", at);
        }
        for i in 0..50 {
            refused.note(SiteId(1), &format!("https://fake{i}.example"), 100 + i);
        }
        let listed = refused.of(SiteId(1), 1000);
        assert_eq!(listed.len(), PER_SITE);
        assert!(
            listed
                .iter()
                .any(|r| r.origin == "https://www.myshop.example" && r.count == 3),
            "{listed:?}"
        );
    }

    /// A burst that stopped holds its places for a day at most: then a new origin takes the
    /// place of a stale one, however often it was refused, before any origin refused since; and
    /// a stale origin is not listed even while nothing new takes its place.
    #[test]
    fn a_stale_origin_makes_room_however_often_it_was_refused() {
        let refused = RefusedOrigins::default();
        for _ in 0..1000 {
            refused.note(SiteId(1), "https://burst.example", 0);
        }
        for i in 1..i64::try_from(PER_SITE).unwrap_or_default() {
            refused.note(
                SiteId(1),
                &format!("https://{i}.example"),
                STALE_AFTER_MS + i,
            );
        }
        refused.note(SiteId(1), "https://www.myshop.example", 2 * STALE_AFTER_MS);
        let listed: Vec<String> = refused
            .of(SiteId(1), 2 * STALE_AFTER_MS)
            .into_iter()
            .map(|r| r.origin)
            .collect();
        assert!(listed.contains(&"https://www.myshop.example".to_owned()));
        assert!(
            !listed.contains(&"https://burst.example".to_owned()),
            "{listed:?}"
        );
        assert_eq!(listed.len(), PER_SITE);
        // A day after the last refusal, nothing is listed, though nothing took their places.
        assert_eq!(refused.of(SiteId(1), 3 * STALE_AFTER_MS), Vec::new());
    }

    #[test]
    fn only_what_a_browser_could_send_is_noted() {
        let refused = RefusedOrigins::default();
        for junk in [
            "javascript:alert(1)",
            "</textarea>",
            "shop.example",
            "ftp://x.example",
        ] {
            refused.note(SiteId(1), junk, 1);
        }
        assert_eq!(refused.of(SiteId(1), 1000), Vec::new());
        refused.note(SiteId(1), "null", 2);
        refused.note(SiteId(1), "http://localhost:3000", 3);
        assert_eq!(refused.of(SiteId(1), 1000).len(), 2);
    }

    #[test]
    fn a_long_origin_is_cut() {
        let refused = RefusedOrigins::default();
        let long = format!("https://{}.example", "x".repeat(1000));
        refused.note(SiteId(1), &long, 1);
        assert_eq!(
            refused.of(SiteId(1), 1000)[0].origin.len(),
            MAX_ORIGIN_CHARS
        );
    }
}

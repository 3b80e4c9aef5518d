//! Reading the log: the filters the audit page and `GET /api/v1/audit` share, parsed once from
//! their query strings into the store's filter.

use serde::Deserialize;

use crate::store::AuditFilter;

/// Events per page of the audit page and the API.
pub const PAGE_SIZE: u32 = 50;
const DAY_MS: i64 = 86_400_000;

/// The query string of the audit page and API; every field may be empty (no filter).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuditQuery {
    /// Part of the actor's email (or `cli`).
    #[serde(default)]
    pub actor: String,
    /// An action code or its prefix (`site`, `session.sign_in_failed`).
    #[serde(default)]
    pub action: String,
    /// First day shown, `YYYY-MM-DD` (UTC).
    #[serde(default)]
    pub since: String,
    /// Last day shown, `YYYY-MM-DD` (UTC), inclusive.
    #[serde(default)]
    pub until: String,
    /// Show events with smaller ids than this one (the next page). Text, read by
    /// [`AuditQuery::filter`], so that one that does not parse is a 422 naming it, as a bad date
    /// is, not the bare 400 of a query string that does not deserialize.
    #[serde(default)]
    pub before: String,
}

/// Unix milliseconds at the start of a UTC day written `YYYY-MM-DD`.
fn day_start(text: &str) -> Result<i64, String> {
    let parsed = humantime::parse_rfc3339(&format!("{text}T00:00:00Z"))
        .map_err(|_| format!("“{text}” is not a date like 2026-12-01."))?;
    let since_epoch = parsed
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| format!("“{text}” is before 1970."))?;
    i64::try_from(since_epoch.as_millis()).map_err(|_| format!("“{text}” is too far away."))
}

/// An event id given as a page's `before`.
fn event_id(text: &str) -> Result<i64, String> {
    text.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| {
            // Cut as the API cuts the names it echoes.
            let shown: String = text.chars().take(64).collect();
            let cut = if shown.len() < text.len() { "…" } else { "" };
            format!(
                "“{shown}{cut}” is not an event id: pass the `next_before` of the previous page."
            )
        })
}

fn non_empty(text: &str) -> Option<&str> {
    Some(text.trim()).filter(|t| !t.is_empty())
}

impl AuditQuery {
    /// The store filter for one page.
    ///
    /// # Errors
    /// A message naming the date that is not `YYYY-MM-DD`, or the `before` that is no event id.
    pub fn filter(&self) -> Result<AuditFilter, String> {
        Ok(AuditFilter {
            actor: non_empty(&self.actor).map(str::to_owned),
            action: non_empty(&self.action)
                .map(|a| a.trim_end_matches('.').to_owned())
                .filter(|a| !a.is_empty()),
            since: non_empty(&self.since).map(day_start).transpose()?,
            until: non_empty(&self.until)
                .map(|d| day_start(d).map(|ms| ms + DAY_MS))
                .transpose()?,
            before: non_empty(&self.before).map(event_id).transpose()?,
            limit: PAGE_SIZE,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_includes_its_whole_day() {
        let query = AuditQuery {
            since: "2026-12-01".into(),
            until: "2026-12-01".into(),
            action: "site.".into(),
            ..AuditQuery::default()
        };
        let filter = query.filter().expect("valid");
        assert_eq!(filter.since, Some(1_796_083_200_000));
        assert_eq!(filter.until, Some(1_796_083_200_000 + DAY_MS));
        assert_eq!(filter.action.as_deref(), Some("site"));
    }

    #[test]
    fn a_bad_date_is_named() {
        let query = AuditQuery {
            since: "yesterday".into(),
            ..AuditQuery::default()
        };
        assert!(query.filter().expect_err("invalid").contains("yesterday"));
    }

    #[test]
    fn a_page_before_an_event_id_only() {
        let page = |before: &str| {
            AuditQuery {
                before: before.into(),
                ..AuditQuery::default()
            }
            .filter()
        };
        assert_eq!(page("42").expect("valid").before, Some(42));
        assert_eq!(page("").expect("no page").before, None);
        for bad in ["abc", "0", "-3", "4.5"] {
            assert!(page(bad).expect_err("invalid").contains(bad), "{bad}");
        }
        // A long one is echoed cut, as the API cuts the names it echoes.
        let long = format!("a{}", "9".repeat(300));
        let said = page(&long).expect_err("invalid");
        assert!(
            said.starts_with(&format!("“a{}…”", "9".repeat(63))),
            "{said}"
        );
    }
}

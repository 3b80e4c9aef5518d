//! What `welcome.site` tells the widget (docs/widget-protocol.md#welcome): the site's look, whether
//! agents are online, and its business hours at this instant: open or not, when it opens next,
//! and what to show while closed.

use crate::chat::{Site, availability};

use super::protocol::SiteInfo;

/// The `site` object of `welcome` for `site` at `now_ms` (the app's wall clock, which tests fix).
pub fn site_info(site: &Site, agents_online: bool, now_ms: i64) -> SiteInfo<'_> {
    let now = availability(site.hours.as_ref(), now_ms);
    // The away details only travel while closed: an open site's welcome is what it always was.
    let closed = site.hours.as_ref().filter(|_| !now.is_open);
    SiteInfo {
        name: &site.name,
        greeting: &site.greeting,
        color: &site.color,
        position: &site.position,
        agents_online,
        open: now.is_open,
        opens_at: now.opens_at,
        away_message: closed.map(|h| h.away_message.as_str()),
        out_of_hours: closed.map(|h| h.out_of_hours.as_str()),
    }
}

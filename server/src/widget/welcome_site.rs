//! What `welcome.site` tells the widget (docs/widget-protocol.md#welcome-server--client): the
//! site's look, whether agents are online, its business hours at this instant (open or not, when
//! it opens next, what to show while closed) and the pre-chat form the visitor still has to fill.

use crate::chat::{Site, availability};
use crate::values::{FieldMode, PrechatForm};

use super::protocol::{PrechatInfo, PrechatQuestion, SiteInfo};

/// The `site` object of `welcome` for `site` at `now_ms` (the app's wall clock, which tests fix);
/// `asks_prechat` when this visitor has not answered the site's pre-chat form; `mails_replies`
/// when an address the visitor leaves gets replies by email.
pub fn site_info(
    site: &Site,
    (agents_online, mails_replies): (bool, bool),
    now_ms: i64,
    asks_prechat: bool,
) -> SiteInfo<'_> {
    let now = availability(site.hours.as_ref(), now_ms);
    // The away details only travel while closed: an open site's welcome is what it always was.
    let closed = site.hours.as_ref().filter(|_| !now.is_open);
    SiteInfo {
        name: &site.name,
        greeting: &site.greeting,
        greetings: &site.greetings,
        color: &site.color,
        position: &site.position,
        agents_online,
        mails_replies,
        files: site.takes_files,
        open: now.is_open,
        opens_at: now.opens_at,
        away_message: closed.map(|h| h.away_message.as_str()),
        away_messages: closed
            .map(|h| &h.away_messages)
            .filter(|texts| !texts.is_empty()),
        out_of_hours: closed.map(|h| h.out_of_hours.as_str()),
        prechat: site
            .prechat
            .as_ref()
            .filter(|_| asks_prechat)
            .map(prechat_info),
    }
}

fn prechat_info(form: &PrechatForm) -> PrechatInfo<'_> {
    PrechatInfo {
        name: form.name.as_str(),
        email: form.email.as_str(),
        question: (form.question_mode != FieldMode::Off).then(|| PrechatQuestion {
            label: &form.question,
            mode: form.question_mode.as_str(),
        }),
    }
}

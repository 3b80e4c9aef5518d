//! Validated values every layer passes around: parse, don't validate. A leaf: it imports nothing
//! from the crate, so the store may take these types as well as the domain that parses them.

mod author;
mod by_language;
mod closure;
mod hours;
mod identity;
mod prechat;
mod site;
mod tag;
mod text;
mod token_scope;
mod visitor_context;

pub use author::Author;
pub use by_language::{AWAY_LINES, ByLanguage, GREETING_LINES, language_lines};
pub use closure::Closure;
pub use hours::{
    BusinessHours, DAY_NAMES, HoursField, InvalidHours, OutOfHours, SiteHours, day_and_date,
};
pub use identity::{MAX_USER_ID_CHARS, VisitorIdentity, anonymous_visitor};
pub use prechat::{FieldMode, PrechatAnswers, PrechatForm};
pub use site::{SiteLimits, SiteSettings, WIDGET_LOCALES};
pub use tag::{MAX_TAG_CHARS, MAX_TAGS, Tag};
pub use text::{
    BODY_CONTROL, BODY_EMPTY, BODY_TOO_LONG, ClientId, Invalid, MAX_BODY_CHARS, MessageBody,
    Origin, breaks_the_line, continued, indented, is_direction_control, is_invisible,
    is_visitor_email, lines_as_shown, listed_in_words, one_line,
};
pub use token_scope::TokenScope;
pub use visitor_context::{MAX_URL_CHARS, VisitorContext};

//! A site's settings: the one model the admin form and `porch site add` parse into, the store
//! writes and reads, and (its limits) the brakes take. The defaults are the schema's column
//! defaults; a store test holds the two equal.

use std::collections::BTreeMap;

/// Brake settings of a site (see docs/widget-protocol.md, "The flood brake").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteLimits {
    /// A visitor's sustained rate (their token bucket's refill).
    pub visitor_messages_per_minute: u32,
    /// Messages a visitor may send at once (their token bucket's size).
    pub visitor_burst: u32,
    /// Messages a minute on the whole site above which the flood brake holds back.
    pub flood_messages_per_minute: u32,
    /// New conversations a minute on the whole site above which new chats wait.
    pub flood_conversations_per_minute: u32,
}

impl SiteLimits {
    /// The flood brake's limits: messages, and new conversations, a minute on the whole site.
    pub fn flood_per_minute(self) -> (u32, u32) {
        (
            self.flood_messages_per_minute,
            self.flood_conversations_per_minute,
        )
    }

    /// The limits of a new site, as `migrations/0001_core.sql` gives a row.
    pub const DEFAULT: Self = Self {
        visitor_messages_per_minute: 30,
        visitor_burst: 10,
        flood_messages_per_minute: 600,
        flood_conversations_per_minute: 60,
    };
}

/// A site's editable settings, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSettings {
    /// Shown in the widget's header and to agents.
    pub name: String,
    /// Origins allowed to embed the widget, each as `Origin::as_str`, without repeats.
    pub origins: Vec<String>,
    pub greeting: String,
    /// `#rrggbb`, lower-case.
    pub color: String,
    /// `left` or `right`.
    pub position: String,
    pub limits: SiteLimits,
    /// Days after a conversation's last activity when it is deleted; `None` keeps everything
    /// (the default). See docs/privacy.md.
    pub retention_days: Option<u32>,
    /// The widget's language: empty lets each visitor's browser choose (the default), else one
    /// of [`WIDGET_LOCALES`]' codes.
    pub locale: String,
    /// Greetings in other languages, by language code (one of [`WIDGET_LOCALES`]): a panel in
    /// that language shows its own instead of `greeting`.
    pub greetings: BTreeMap<String, String>,
}

/// The languages the widget speaks: code and name in that language, English first (the
/// widget's files are `server/assets/widget/locales/{code}.json`; a test holds the two lists equal).
pub const WIDGET_LOCALES: &[(&str, &str)] = &[
    ("en", "English"),
    ("de", "Deutsch"),
    ("fr", "Fran\u{e7}ais"),
    ("es", "Espa\u{f1}ol"),
    ("pt", "Portugu\u{ea}s"),
    ("it", "Italiano"),
    ("nl", "Nederlands"),
    ("pl", "Polski"),
    ("tr", "T\u{fc}rk\u{e7}e"),
    ("ja", "\u{65e5}\u{672c}\u{8a9e}"),
    ("zh", "\u{7b80}\u{4f53}\u{4e2d}\u{6587}"),
    ("ar", "\u{627}\u{644}\u{639}\u{631}\u{628}\u{64a}\u{629}"),
    ("he", "\u{5e2}\u{5d1}\u{5e8}\u{5d9}\u{5ea}"),
];

impl SiteSettings {
    /// The greeting of a new site, as the schema gives a row.
    pub const DEFAULT_GREETING: &str = "Hi! How can we help?";
    /// The colour of a new site, as the schema gives a row.
    pub const DEFAULT_COLOR: &str = "#2563eb";
    /// The position of a new site, as the schema gives a row.
    pub const DEFAULT_POSITION: &str = "right";

    /// A new site's settings: this name and these origins, every other setting at its default.
    /// The caller vouches for the name and origins (what people type goes through the domain's
    /// parsing first).
    pub fn new(name: String, origins: Vec<String>) -> Self {
        Self {
            name,
            origins,
            greeting: Self::DEFAULT_GREETING.to_owned(),
            color: Self::DEFAULT_COLOR.to_owned(),
            position: Self::DEFAULT_POSITION.to_owned(),
            limits: SiteLimits::DEFAULT,
            retention_days: None,
            locale: String::new(),
            greetings: BTreeMap::new(),
        }
    }
}

//! A site's settings: the one model the admin form and `porch site add` parse into, the store
//! writes and reads, and (its limits) the brakes take. The defaults are the schema's column
//! defaults; a store test holds the two equal.

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
}

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
        }
    }
}

//! Creating, editing and deleting sites: settings as typed (in the admin form or on `porch site
//! add`'s command line) parsed into [`SiteSettings`], one parse for both, and the use cases that
//! store them and drop the widget's cached copy so edits apply to the next widget connection.

use std::sync::Arc;

use serde_json::json;

use crate::attachments::HARD_CAP_BYTES;
use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, NewSite, SiteRow, Writer};
use crate::values::{GREETING_LINES, Invalid, SiteLimits, SiteSettings, language_lines};

use super::site::{SiteDirectory, new_site_key};
use super::site_fields::{
    parse_colour, parse_greeting, parse_locale, parse_name, parse_origins, parse_position,
    parse_retention, rate,
};
use super::{Chat, Error};

/// A site's settings, as submitted (every field a string, as in a form).
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct SiteSettingsInput {
    #[serde(default)]
    pub name: String,
    /// One origin per line (commas and spaces also separate).
    #[serde(default)]
    pub origins: String,
    #[serde(default)]
    pub greeting: String,
    #[serde(default)]
    pub color: String,
    #[serde(default)]
    pub position: String,
    #[serde(default)]
    pub visitor_messages_per_minute: String,
    #[serde(default)]
    pub visitor_burst: String,
    #[serde(default)]
    pub flood_messages_per_minute: String,
    #[serde(default)]
    pub flood_conversations_per_minute: String,
    /// Days after which conversations are deleted; empty keeps them.
    #[serde(default)]
    pub retention_days: String,
    /// The widget's language code; empty lets each visitor's browser choose.
    #[serde(default)]
    pub locale: String,
    /// Greetings in other languages, one a line: `de: Hallo!`.
    #[serde(default)]
    pub greetings: String,
}

/// Typed settings refused: why, and the field the reason is about, by its control's id on the
/// site form (none for the position, which is picked, not typed), so the form can mark it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct RefusedSettings {
    pub field: Option<&'static str>,
    pub reason: Invalid,
}

/// Ties a field's refusal to the field (`map_err(at("name"))`).
fn at(field: &'static str) -> impl FnOnce(Invalid) -> RefusedSettings {
    move |reason| RefusedSettings {
        field: Some(field),
        reason,
    }
}

impl From<&SiteSettings> for SiteSettingsInput {
    /// The input that would submit these settings unchanged (to fill the edit form).
    fn from(settings: &SiteSettings) -> Self {
        let limits = &settings.limits;
        Self {
            name: settings.name.clone(),
            origins: settings.origins.join("\n"),
            greeting: settings.greeting.clone(),
            color: settings.color.clone(),
            position: settings.position.clone(),
            visitor_messages_per_minute: limits.visitor_messages_per_minute.to_string(),
            visitor_burst: limits.visitor_burst.to_string(),
            flood_messages_per_minute: limits.flood_messages_per_minute.to_string(),
            flood_conversations_per_minute: limits.flood_conversations_per_minute.to_string(),
            retention_days: settings
                .retention_days
                .map_or_else(String::new, |d| d.to_string()),
            locale: settings.locale.clone(),
            greetings: language_lines(&settings.greetings),
        }
    }
}

impl SiteSettingsInput {
    /// The defaults of a new site with a name and origins to fill in.
    pub fn new_site() -> Self {
        Self::from(&SiteSettings::new(String::new(), Vec::new()))
    }

    /// Checks every field, in the form's order; the first field found wrong is reported (with
    /// every refused origin, when that is the origins).
    pub fn parse(&self) -> Result<SiteSettings, RefusedSettings> {
        // Fields are evaluated in the order written, so this is also the order of the checks.
        Ok(SiteSettings {
            name: parse_name(&self.name).map_err(at("name"))?,
            origins: parse_origins(&self.origins).map_err(at("origins"))?,
            greeting: parse_greeting(&self.greeting).map_err(at("greeting"))?,
            color: parse_colour(&self.color).map_err(at("color"))?,
            position: parse_position(&self.position).map_err(|reason| RefusedSettings {
                field: None,
                reason,
            })?,
            retention_days: parse_retention(&self.retention_days).map_err(at("retention_days"))?,
            locale: parse_locale(&self.locale).map_err(at("locale"))?,
            greetings: GREETING_LINES
                .parse(&self.greetings)
                .map_err(at("greetings"))?,
            limits: SiteLimits {
                visitor_messages_per_minute: rate(
                    &self.visitor_messages_per_minute,
                    "Visitor messages per minute must be a whole number from 1 to 100000.",
                )
                .map_err(at("visitor_messages_per_minute"))?,
                visitor_burst: rate(
                    &self.visitor_burst,
                    "The visitor burst must be a whole number from 1 to 100000.",
                )
                .map_err(at("visitor_burst"))?,
                flood_messages_per_minute: rate(
                    &self.flood_messages_per_minute,
                    "Site messages per minute must be a whole number from 1 to 100000.",
                )
                .map_err(at("flood_messages_per_minute"))?,
                flood_conversations_per_minute: rate(
                    &self.flood_conversations_per_minute,
                    "New conversations per minute must be a whole number from 1 to 100000.",
                )
                .map_err(at("flood_conversations_per_minute"))?,
            },
        })
    }
}

/// Creates a site with the given settings and returns its key.
pub async fn create_site(
    writer: &Arc<Writer>,
    actor: &Actor,
    settings: SiteSettings,
) -> Result<String, Error> {
    let key = new_site_key();
    let stored_key = key.clone();
    let actor = actor.clone();
    writer
        .write(move |c| {
            let target = Target::site(&stored_key, &settings.name);
            audit::record(c, &actor, AuditAction::SiteCreated, &target, &json!({}))?;
            store::insert_site(
                c,
                &NewSite {
                    key: &stored_key,
                    settings: &settings,
                    created_at: now_ms(),
                },
            )
        })
        .await?;
    Ok(key)
}

/// Replaces a site's settings; the widget sees them on its next connection, the live inbox
/// on its next event (it forgets what it followed, which shows the site's name).
pub async fn update_site(
    chat: &Chat,
    directory: &SiteDirectory,
    actor: &Actor,
    key: &str,
    settings: SiteSettings,
) -> Result<(), Error> {
    let owned = key.to_owned();
    let actor = actor.clone();
    let found = chat
        .writer
        .write(move |c| {
            let before = store::find_site_by_key(c, &owned)?;
            let found = store::update_site(c, &owned, &settings)?;
            // A save that changes nothing (the form sent back as it was, the API's PUT of the
            // value already set) is not an event worth a line of the audit log.
            if let (true, Some(before)) = (found, before)
                && let Some(detail) = settings_changes(&before.settings, &settings)
            {
                let target = Target::site(&owned, &settings.name);
                audit::record(c, &actor, AuditAction::SiteUpdated, &target, &detail)?;
            }
            Ok(found)
        })
        .await?;
    directory.reload(key).await;
    chat.live.summaries().forget_all();
    if found {
        Ok(())
    } else {
        Err(Error::NotFound("site"))
    }
}

/// Bytes in the megabyte of the site form's attachment field (a mebibyte, so the default
/// 10,485,760 bytes reads 10).
const MEGABYTE: u64 = 1024 * 1024;

/// The attachment limit as the site form shows it: megabytes, with two decimals when the API
/// set a limit that is not a whole number of them.
pub fn attachment_megabytes(bytes: u64) -> String {
    if bytes.is_multiple_of(MEGABYTE) {
        (bytes / MEGABYTE).to_string()
    } else {
        #[allow(clippy::cast_precision_loss)] // at most 25 MiB, exact in an f64
        let megabytes = bytes as f64 / MEGABYTE as f64;
        format!("{megabytes:.2}")
    }
}

/// Reads the site form's attachment field: megabytes from 0 (no attachments) to 25, up to two
/// decimals, as bytes.
///
/// # Errors
/// Anything else.
pub fn parse_attachment_megabytes(raw: &str) -> Result<u64, Invalid> {
    let invalid =
        Invalid::from("The largest attachment is a number of MB from 0 (no attachments) to 25.");
    let raw = raw.trim();
    let (whole, fraction) = raw.split_once('.').unwrap_or((raw, ""));
    // At most two digits before the point: the cap is 25, and the arithmetic cannot overflow.
    let is_number = (1..=2).contains(&whole.len())
        && whole.bytes().all(|b| b.is_ascii_digit())
        && fraction.len() <= 2
        && !raw.ends_with('.')
        && fraction.bytes().all(|b| b.is_ascii_digit());
    if !is_number {
        return Err(invalid);
    }
    let hundredths = whole.parse::<u64>().map_err(|_| invalid.clone())? * 100
        + format!("{fraction:0<2}").parse::<u64>().unwrap_or(0);
    let bytes = (hundredths * MEGABYTE).div_ceil(100);
    if bytes > HARD_CAP_BYTES {
        return Err(invalid);
    }
    Ok(bytes)
}

/// What a save of the site's settings changed, for its audit record: the names of the fields
/// that differ (`changed`), and the retention's new value when it changed (`retention_days`,
/// `null` for keeping everything), since a shorter one deletes conversations; `None` when
/// nothing differs.
fn settings_changes(before: &SiteSettings, after: &SiteSettings) -> Option<serde_json::Value> {
    // Every field named, so that a new one does not compile until it is compared here.
    let SiteSettings {
        name: _,
        origins: _,
        greeting: _,
        color: _,
        position: _,
        limits: _,
        retention_days: _,
        locale: _,
        greetings: _,
    } = after;
    let fields = [
        ("name", before.name != after.name),
        // Stored in order, typed in any: the same set in another order is no change.
        ("origins", sorted(&before.origins) != sorted(&after.origins)),
        ("greeting", before.greeting != after.greeting),
        ("color", before.color != after.color),
        ("position", before.position != after.position),
        ("limits", before.limits != after.limits),
        (
            "retention_days",
            before.retention_days != after.retention_days,
        ),
        ("locale", before.locale != after.locale),
        ("greetings", before.greetings != after.greetings),
    ];
    let changed: Vec<&str> = fields
        .into_iter()
        .filter_map(|(name, differs)| differs.then_some(name))
        .collect();
    if changed.is_empty() {
        return None;
    }
    let mut detail = json!({ "changed": changed });
    if before.retention_days != after.retention_days {
        detail["retention_days"] = json!(after.retention_days);
    }
    Some(detail)
}

fn sorted(origins: &[String]) -> Vec<&str> {
    let mut sorted: Vec<&str> = origins.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted
}

/// Sets the largest attachment a site accepts (the caller checked the range), recorded as
/// `site.updated` with the new value in its detail when it changed; the widget's copy of the
/// site is read again (whether the panel offers files).
pub async fn set_attachment_limit(
    (writer, directory): (&Arc<Writer>, &SiteDirectory),
    actor: &Actor,
    site: &SiteRow,
    bytes: u64,
) -> Result<(), Error> {
    let (actor, id) = (actor.clone(), site.id);
    let target = Target::site(&site.key, &site.settings.name);
    writer
        .write(move |c| {
            // Compared in the write, so that the limit already set records nothing, whoever
            // changed it a moment before.
            if store::find_attachment_limit(c, id)? == bytes {
                return Ok(());
            }
            store::set_attachment_limit(c, id, bytes)?;
            let detail = json!({"attachment_max_bytes": bytes});
            audit::record(c, &actor, AuditAction::SiteUpdated, &target, &detail)
        })
        .await?;
    directory.reload(&site.key).await;
    Ok(())
}

/// Deletes a site and everything it holds (visitors, conversations, messages), also from what
/// the live inbox follows in memory.
pub async fn delete_site(
    chat: &Chat,
    directory: &SiteDirectory,
    actor: &Actor,
    key: &str,
) -> Result<(), Error> {
    let owned = key.to_owned();
    let actor = actor.clone();
    let found = chat
        .writer
        .write(move |c| {
            let Some(site) = store::find_site_by_key(c, &owned)? else {
                return Ok(false);
            };
            let target = Target::site(&owned, &site.settings.name);
            audit::record(c, &actor, AuditAction::SiteDeleted, &target, &json!({}))?;
            store::delete_site(c, &owned)
        })
        .await?;
    directory.reload(key).await;
    chat.live.summaries().forget_all();
    if found {
        Ok(())
    } else {
        Err(Error::NotFound("site"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> SiteSettingsInput {
        SiteSettingsInput {
            name: " Acme ".into(),
            origins: "https://Acme.example\nhttps://acme.example/, http://localhost:3000".into(),
            ..SiteSettingsInput::new_site()
        }
    }

    #[test]
    fn valid_settings_are_normalised() {
        let valid = input().parse().expect("valid");
        assert_eq!(valid.name, "Acme");
        assert_eq!(
            valid.origins,
            vec!["https://acme.example", "http://localhost:3000"]
        );
        assert_eq!(valid.limits, SiteLimits::DEFAULT);
        assert_eq!(valid.retention_days, None);
        let kept = SiteSettingsInput {
            retention_days: " 30 ".into(),
            ..input()
        };
        assert_eq!(kept.parse().expect("valid").retention_days, Some(30));
    }

    #[test]
    fn a_refused_origin_is_named() {
        let typed = SiteSettingsInput {
            origins: "https://ok.example\nhttps://shop.example/checkout".into(),
            ..input()
        };
        let refused = typed.parse().expect_err("a path");
        assert_eq!(refused.field, Some("origins"));
        assert!(
            refused
                .reason
                .0
                .starts_with("https://shop.example/checkout: An origin is"),
            "{refused}"
        );
    }

    #[test]
    fn a_language_and_greetings_in_other_languages_are_parsed_and_shown_back() {
        let typed = SiteSettingsInput {
            locale: " fr ".into(),
            greetings: "\n fr : Bonjour ! Une question ?\nde: Hallo: wie k\u{f6}nnen wir helfen?\n"
                .into(),
            ..input()
        };
        let settings = typed.parse().expect("valid");
        assert_eq!(settings.locale, "fr");
        assert_eq!(settings.greetings["fr"], "Bonjour ! Une question ?");
        assert_eq!(
            settings.greetings["de"],
            "Hallo: wie k\u{f6}nnen wir helfen?"
        );
        let shown = SiteSettingsInput::from(&settings);
        assert_eq!(
            shown.greetings,
            "de: Hallo: wie k\u{f6}nnen wir helfen?\nfr: Bonjour ! Une question ?"
        );
        assert_eq!(shown.parse().expect("valid"), settings);
    }

    #[test]
    fn bad_fields_are_refused_and_named() {
        type Change = fn(&mut SiteSettingsInput);
        let cases: [(Change, Option<&str>); 15] = [
            (|i| i.name = " ".into(), Some("name")),
            (|i| i.origins = String::new(), Some("origins")),
            (|i| i.origins = "acme.example".into(), Some("origins")),
            (|i| i.color = "blue".into(), Some("color")),
            (|i| i.position = "top".into(), None),
            (|i| i.visitor_burst = "0".into(), Some("visitor_burst")),
            (
                |i| i.flood_messages_per_minute = "x".into(),
                Some("flood_messages_per_minute"),
            ),
            (|i| i.retention_days = "0".into(), Some("retention_days")),
            (
                |i| i.retention_days = "36501".into(),
                Some("retention_days"),
            ),
            (|i| i.locale = "sv".into(), Some("locale")),
            (|i| i.greetings = "Hallo!".into(), Some("greetings")),
            (|i| i.greetings = "sv: Hej!".into(), Some("greetings")),
            (|i| i.greetings = "de:".into(), Some("greetings")),
            (
                |i| i.greetings = "de: Hallo!\nde: Guten Tag!".into(),
                Some("greetings"),
            ),
            (
                |i| i.greetings = format!("de: {}", "x".repeat(501)),
                Some("greetings"),
            ),
        ];
        for (change, field) in cases {
            let mut i = input();
            change(&mut i);
            let refused = i.parse().expect_err("refused");
            assert_eq!(refused.field, field, "{i:?}");
        }
        // Two wrong fields: the first in the form's order is the one reported.
        let both = SiteSettingsInput {
            color: "blue".into(),
            visitor_burst: "0".into(),
            ..input()
        };
        assert_eq!(both.parse().expect_err("refused").field, Some("color"));
    }

    #[test]
    fn the_attachment_field_reads_megabytes_up_to_the_cap() {
        for (raw, bytes) in [
            ("0", 0),
            ("10", 10_485_760),
            (" 0.5 ", 524_288),
            ("0.01", 10_486),
            ("25", 26_214_400),
            ("25.00", 26_214_400),
        ] {
            assert_eq!(parse_attachment_megabytes(raw), Ok(bytes), "{raw}");
        }
        for raw in [
            "",
            "25.01",
            "26",
            "100",
            "99999999999999999999",
            "-1",
            "1.234",
            ".5",
            "5.",
            "1e3",
            "ten",
            "1,5",
        ] {
            assert!(parse_attachment_megabytes(raw).is_err(), "{raw}");
        }
    }

    #[test]
    fn the_attachment_field_shows_what_it_reads_back() {
        assert_eq!(attachment_megabytes(10_485_760), "10");
        assert_eq!(attachment_megabytes(0), "0");
        assert_eq!(attachment_megabytes(524_288), "0.50");
        for bytes in [10_485_760, 524_288, 26_214_400, 0] {
            let shown = attachment_megabytes(bytes);
            assert_eq!(parse_attachment_megabytes(&shown), Ok(bytes), "{shown}");
        }
    }
}

//! Creating, editing and deleting sites: settings as typed (in the admin form or on `porch site
//! add`'s command line) parsed into [`SiteSettings`], one parse for both, and the use cases that
//! store them and drop the widget's cached copy so edits apply to the next widget connection.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, NewSite, Writer};
use crate::values::{Invalid, Origin, SiteLimits, SiteSettings, WIDGET_LOCALES};

use super::Error;
use super::site::{SiteDirectory, new_site_key};

/// Highest brake value accepted, so a typo cannot turn a brake off by accident.
const MAX_RATE: u32 = 100_000;
/// Longest retention accepted (100 years, as `migrations/0014_privacy.sql` checks).
const MAX_RETENTION_DAYS: u32 = 36_500;
/// Longest greeting, in characters.
const MAX_GREETING_CHARS: usize = 500;

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

/// Greetings in other languages, one a line as `code: text`; blank lines are skipped.
fn parse_greetings(raw: &str) -> Result<BTreeMap<String, String>, Invalid> {
    let mut greetings = BTreeMap::new();
    for line in raw.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (code, text) = line.split_once(':').ok_or(Invalid(
            "Write each greeting in another language on its own line, as \"de: Hallo!\".",
        ))?;
        let (code, text) = (code.trim(), text.trim());
        if !WIDGET_LOCALES.iter().any(|(c, _)| *c == code) {
            return Err(Invalid(
                "A greeting's language code is not one the widget speaks (such as de or fr).",
            ));
        }
        if text.is_empty() || text.chars().count() > MAX_GREETING_CHARS {
            return Err(Invalid("Each greeting has 1 to 500 characters."));
        }
        if greetings.insert(code.to_owned(), text.to_owned()).is_some() {
            return Err(Invalid("Write one greeting per language."));
        }
    }
    Ok(greetings)
}

fn rate(raw: &str, message: &'static str) -> Result<u32, Invalid> {
    raw.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_RATE).contains(n))
        .ok_or(Invalid(message))
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
            greetings: settings
                .greetings
                .iter()
                .map(|(code, text)| format!("{code}: {text}"))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

impl SiteSettingsInput {
    /// The defaults of a new site with a name and origins to fill in.
    pub fn new_site() -> Self {
        Self::from(&SiteSettings::new(String::new(), Vec::new()))
    }

    /// Checks every field; the first problem found is reported.
    pub fn parse(&self) -> Result<SiteSettings, Invalid> {
        let name = self.name.trim();
        if name.is_empty() || name.chars().count() > 80 {
            return Err(Invalid("The name must have 1 to 80 characters."));
        }
        let mut origins = Vec::new();
        for raw in self
            .origins
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|o| !o.is_empty())
        {
            let origin = Origin::parse(raw)?.as_str().to_owned();
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        if origins.is_empty() {
            return Err(Invalid(
                "Add at least one allowed origin, such as https://www.example.com.",
            ));
        }
        let greeting = self.greeting.trim();
        if greeting.chars().count() > MAX_GREETING_CHARS {
            return Err(Invalid("The greeting must have at most 500 characters."));
        }
        let color = self.color.trim().to_ascii_lowercase();
        let is_hex_colour = color.len() == 7
            && color.starts_with('#')
            && color[1..].bytes().all(|b| b.is_ascii_hexdigit());
        if !is_hex_colour {
            return Err(Invalid("The colour is written like #2563eb."));
        }
        let position = match self.position.trim() {
            p @ ("left" | "right") => p.to_owned(),
            _ => return Err(Invalid("The position is left or right.")),
        };
        let retention_days = match self.retention_days.trim() {
            "" => None,
            raw => Some(
                raw.parse::<u32>()
                    .ok()
                    .filter(|n| (1..=MAX_RETENTION_DAYS).contains(n))
                    .ok_or(Invalid(
                        "Retention is a whole number of days from 1 to 36500, or empty to keep \
                         conversations.",
                    ))?,
            ),
        };
        let locale = self.locale.trim();
        if !locale.is_empty() && !WIDGET_LOCALES.iter().any(|(code, _)| *code == locale) {
            return Err(Invalid(
                "The widget's language is empty (each visitor's browser chooses) or one the widget speaks.",
            ));
        }
        Ok(SiteSettings {
            greetings: parse_greetings(&self.greetings)?,
            locale: locale.to_owned(),
            retention_days,
            name: name.to_owned(),
            origins,
            greeting: greeting.to_owned(),
            color,
            position,
            limits: SiteLimits {
                visitor_messages_per_minute: rate(
                    &self.visitor_messages_per_minute,
                    "Visitor messages per minute must be a whole number from 1 to 100000.",
                )?,
                visitor_burst: rate(
                    &self.visitor_burst,
                    "The visitor burst must be a whole number from 1 to 100000.",
                )?,
                flood_messages_per_minute: rate(
                    &self.flood_messages_per_minute,
                    "Site messages per minute must be a whole number from 1 to 100000.",
                )?,
                flood_conversations_per_minute: rate(
                    &self.flood_conversations_per_minute,
                    "New conversations per minute must be a whole number from 1 to 100000.",
                )?,
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

/// Replaces a site's settings; the widget sees them on its next connection.
pub async fn update_site(
    writer: &Arc<Writer>,
    directory: &SiteDirectory,
    actor: &Actor,
    key: &str,
    settings: SiteSettings,
) -> Result<(), Error> {
    let owned = key.to_owned();
    let actor = actor.clone();
    let found = writer
        .write(move |c| {
            let found = store::update_site(c, &owned, &settings)?;
            if found {
                let target = Target::site(&owned, &settings.name);
                audit::record(c, &actor, AuditAction::SiteUpdated, &target, &json!({}))?;
            }
            Ok(found)
        })
        .await?;
    directory.invalidate(key);
    if found {
        Ok(())
    } else {
        Err(Error::NotFound("site"))
    }
}

/// Deletes a site and everything it holds (visitors, conversations, messages).
pub async fn delete_site(
    writer: &Arc<Writer>,
    directory: &SiteDirectory,
    actor: &Actor,
    key: &str,
) -> Result<(), Error> {
    let owned = key.to_owned();
    let actor = actor.clone();
    let found = writer
        .write(move |c| {
            let Some(site) = store::find_site_by_key(c, &owned)? else {
                return Ok(false);
            };
            let target = Target::site(&owned, &site.settings.name);
            audit::record(c, &actor, AuditAction::SiteDeleted, &target, &json!({}))?;
            store::delete_site(c, &owned)
        })
        .await?;
    directory.invalidate(key);
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
    fn bad_fields_are_refused() {
        for change in [
            |i: &mut SiteSettingsInput| i.origins = String::new(),
            |i: &mut SiteSettingsInput| i.origins = "acme.example".into(),
            |i: &mut SiteSettingsInput| i.color = "blue".into(),
            |i: &mut SiteSettingsInput| i.position = "top".into(),
            |i: &mut SiteSettingsInput| i.visitor_burst = "0".into(),
            |i: &mut SiteSettingsInput| i.flood_messages_per_minute = "x".into(),
            |i: &mut SiteSettingsInput| i.retention_days = "0".into(),
            |i: &mut SiteSettingsInput| i.retention_days = "36501".into(),
            |i: &mut SiteSettingsInput| i.locale = "sv".into(),
            |i: &mut SiteSettingsInput| i.greetings = "Hallo!".into(),
            |i: &mut SiteSettingsInput| i.greetings = "sv: Hej!".into(),
            |i: &mut SiteSettingsInput| i.greetings = "de:".into(),
            |i: &mut SiteSettingsInput| i.greetings = "de: Hallo!\nde: Guten Tag!".into(),
            |i: &mut SiteSettingsInput| i.greetings = format!("de: {}", "x".repeat(501)),
        ] {
            let mut i = input();
            change(&mut i);
            assert!(i.parse().is_err(), "{i:?}");
        }
    }
}

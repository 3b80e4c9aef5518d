//! The site form's fields, each parsed on its own: [`super::site_settings`] ties each refusal to
//! its field, in the form's order.

use crate::values::{Invalid, Origin, WIDGET_LOCALES};

/// Highest brake value accepted, so a typo cannot turn a brake off by accident.
const MAX_RATE: u32 = 100_000;
/// Longest retention accepted (100 years, as `migrations/0014_privacy.sql` checks).
const MAX_RETENTION_DAYS: u32 = 36_500;
/// Longest greeting, in characters.
const MAX_GREETING_CHARS: usize = 500;

pub(super) fn rate(raw: &str, message: &'static str) -> Result<u32, Invalid> {
    raw.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=MAX_RATE).contains(n))
        .ok_or(Invalid::from(message))
}

pub(super) fn parse_name(raw: &str) -> Result<String, Invalid> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > 80 {
        return Err(Invalid::from("The name must have 1 to 80 characters."));
    }
    Ok(name.to_owned())
}

pub(super) fn parse_origins(raw: &str) -> Result<Vec<String>, Invalid> {
    let mut origins = Vec::new();
    let mut refused = Vec::new();
    for raw in raw
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|o| !o.is_empty())
    {
        match Origin::parse(raw) {
            Ok(origin) if !origins.contains(&origin.as_str().to_owned()) => {
                origins.push(origin.as_str().to_owned());
            }
            Ok(_) => {}
            // Each named, and all at once, so a list is fixed in one go.
            Err(invalid) => refused.push(format!("{raw}: {invalid}")),
        }
    }
    if !refused.is_empty() {
        return Err(Invalid::from(refused.join(" ")));
    }
    if origins.is_empty() {
        return Err(Invalid::from(
            "Add at least one allowed origin, such as https://www.example.com.",
        ));
    }
    Ok(origins)
}

pub(super) fn parse_greeting(raw: &str) -> Result<String, Invalid> {
    let greeting = raw.trim();
    if greeting.chars().count() > MAX_GREETING_CHARS {
        return Err(Invalid::from(
            "The greeting must have at most 500 characters.",
        ));
    }
    Ok(greeting.to_owned())
}

pub(super) fn parse_colour(raw: &str) -> Result<String, Invalid> {
    let color = raw.trim().to_ascii_lowercase();
    let is_hex_colour = color.len() == 7
        && color.starts_with('#')
        && color[1..].bytes().all(|b| b.is_ascii_hexdigit());
    if !is_hex_colour {
        return Err(Invalid::from("The colour is written like #2563eb."));
    }
    Ok(color)
}

pub(super) fn parse_position(raw: &str) -> Result<String, Invalid> {
    match raw.trim() {
        p @ ("left" | "right") => Ok(p.to_owned()),
        _ => Err(Invalid::from("The position is left or right.")),
    }
}

pub(super) fn parse_retention(raw: &str) -> Result<Option<u32>, Invalid> {
    match raw.trim() {
        "" => Ok(None),
        raw => raw
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_RETENTION_DAYS).contains(n))
            .map(Some)
            .ok_or(Invalid::from(
                "Retention is a whole number of days from 1 to 36500, or empty to keep \
                 conversations.",
            )),
    }
}

pub(super) fn parse_locale(raw: &str) -> Result<String, Invalid> {
    let locale = raw.trim();
    if !locale.is_empty() && !WIDGET_LOCALES.iter().any(|(code, _)| *code == locale) {
        return Err(Invalid::from(
            "The widget's language is empty (each visitor's browser chooses) or one the widget speaks.",
        ));
    }
    Ok(locale.to_owned())
}

//! The widget's translations: one JSON file per language under `assets/widget/locales/`, served
//! on demand to the panel, which fetches only the visitor's language after the click. English is
//! built into the panel (the `EN` table of `panel/core.js`); with the error texts of `locales/errors-en.json` (which
//! the panel does not carry: in English it shows the server's own words for an error) it is the
//! list of keys every file must translate.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::endpoint::asset;

/// Every language served, by its code (as `panel/core.js` lists them after `en`, in the same order).
const LOCALES: &[(&str, &str)] = &[
    ("de", include_str!("../../assets/widget/locales/de.json")),
    ("fr", include_str!("../../assets/widget/locales/fr.json")),
    ("es", include_str!("../../assets/widget/locales/es.json")),
    ("pt", include_str!("../../assets/widget/locales/pt.json")),
    ("it", include_str!("../../assets/widget/locales/it.json")),
    ("nl", include_str!("../../assets/widget/locales/nl.json")),
    ("pl", include_str!("../../assets/widget/locales/pl.json")),
    ("tr", include_str!("../../assets/widget/locales/tr.json")),
    ("ja", include_str!("../../assets/widget/locales/ja.json")),
    ("zh", include_str!("../../assets/widget/locales/zh.json")),
    ("ar", include_str!("../../assets/widget/locales/ar.json")),
    ("he", include_str!("../../assets/widget/locales/he.json")),
];

/// The launcher's label when the site has no fixed language (`EN.launcher` in `panel/core.js`).
pub(super) const DEFAULT_LABEL: &str = "Chat with us";

/// The launcher's label in a served language (its `launcher` text), for a site with that
/// language fixed; `None` for English or an unknown code.
pub(super) fn launcher_label(code: &str) -> Option<&'static str> {
    let (_, text) = LOCALES.iter().find(|(c, _)| *c == code)?;
    // Only the value's borrowed text is needed: the files are static and their strings plain.
    let texts: std::collections::HashMap<&str, &str> = serde_json::from_str(text).ok()?;
    texts.get("launcher").copied()
}

/// `GET /widget/locales/{code}.json`: one language's texts for the panel; 404 for any other name.
pub async fn locale(Path(file): Path<String>) -> Response {
    let found = file
        .strip_suffix(".json")
        .and_then(|code| LOCALES.iter().find(|(c, _)| *c == code));
    match found {
        // UTF-8 on purpose: fetch() decodes JSON as UTF-8 whatever the header or the page says.
        Some((_, body)) => asset("application/json; charset=utf-8", body),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::{DEFAULT_LABEL, LOCALES, launcher_label};
    use crate::values::WIDGET_LOCALES;

    const CORE_JS: &str = include_str!("../../assets/widget/panel/core.js");
    const ERRORS_EN: &str = include_str!("../../assets/widget/locales/errors-en.json");

    /// The English source of every text: the `EN` table of core.js, which is written as JSON for
    /// this test, and the error texts.
    fn english() -> BTreeMap<String, String> {
        let start = CORE_JS
            .find("const EN = {")
            .expect("core.js has its EN table")
            + 11;
        let end = start + CORE_JS[start..].find("\n  };").expect("the EN table ends") + 4;
        let mut english: BTreeMap<String, String> =
            serde_json::from_str(&CORE_JS[start..end]).expect("the EN table is JSON");
        let errors: BTreeMap<String, String> = serde_json::from_str(ERRORS_EN).expect("JSON");
        assert!(
            errors.keys().all(|k| k.starts_with("e_")),
            "errors-en.json holds error texts (e_…) only"
        );
        english.extend(errors);
        english
    }

    fn placeholders(text: &str) -> BTreeSet<&str> {
        text.match_indices('{')
            .filter_map(|(at, _)| text[at..].find('}').map(|end| &text[at..=at + end]))
            .collect()
    }

    #[test]
    fn every_locale_has_exactly_the_english_keys_with_their_placeholders() {
        let english = english();
        assert!(english.len() > 30, "the EN table was not read whole");
        for (code, text) in LOCALES {
            let locale: BTreeMap<String, String> =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{code}.json: {e}"));
            let missing: Vec<_> = english
                .keys()
                .filter(|k| !locale.contains_key(*k))
                .collect();
            let extra: Vec<_> = locale
                .keys()
                .filter(|k| !english.contains_key(*k))
                .collect();
            assert!(missing.is_empty(), "{code}.json misses {missing:?}");
            assert!(
                extra.is_empty(),
                "{code}.json has keys English lacks: {extra:?}"
            );
            for (key, value) in &locale {
                assert!(!value.trim().is_empty(), "{code}.json: {key} is empty");
                assert_eq!(
                    placeholders(value),
                    placeholders(&english[key]),
                    "{code}.json: {key} must keep the placeholders of {:?}",
                    english[key]
                );
            }
        }
    }

    #[test]
    fn the_panel_offers_exactly_the_languages_served() {
        let start = CORE_JS
            .find("const LOCALES = ")
            .expect("core.js lists its languages")
            + 16;
        let end = start + CORE_JS[start..].find(';').expect("the list ends");
        let offered: Vec<String> = serde_json::from_str(&CORE_JS[start..end]).expect("a JSON list");
        let served: Vec<String> = std::iter::once("en")
            .chain(LOCALES.iter().map(|(code, _)| *code))
            .map(str::to_owned)
            .collect();
        assert_eq!(offered, served);
        let settable: Vec<&str> = WIDGET_LOCALES.iter().map(|(code, _)| *code).collect();
        assert_eq!(served, settable, "the site page offers other languages");
    }

    #[test]
    fn every_language_has_a_launcher_label_and_english_is_the_default() {
        assert_eq!(english()["launcher"], DEFAULT_LABEL);
        for (code, _) in LOCALES {
            assert!(
                launcher_label(code).is_some(),
                "{code}.json has no plain launcher text"
            );
        }
        assert_eq!(launcher_label("en"), None);
    }

    #[test]
    fn placeholders_are_found_in_braces() {
        assert_eq!(
            placeholders("Wait {s} s, {name}."),
            BTreeSet::from(["{s}", "{name}"])
        );
        assert!(placeholders("none").is_empty());
    }
}

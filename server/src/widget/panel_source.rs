//! The chat panel's script as written: one file per responsibility under
//! `assets/widget/panel/`, which are served together as `/widget/panel.js`. Each part is a run of
//! statements of one async function, the panel's scope: a part uses what earlier parts declared,
//! and a function may name one declared later, since it runs only after all of them are.

/// Each part's file name and text, in the order they run.
pub(super) const PARTS: [(&str, &str); 9] = [
    ("core.js", include_str!("../../assets/widget/panel/core.js")),
    ("dom.js", include_str!("../../assets/widget/panel/dom.js")),
    (
        "attachments.js",
        include_str!("../../assets/widget/panel/attachments.js"),
    ),
    ("view.js", include_str!("../../assets/widget/panel/view.js")),
    (
        "connection.js",
        include_str!("../../assets/widget/panel/connection.js"),
    ),
    (
        "your-data.js",
        include_str!("../../assets/widget/panel/your-data.js"),
    ),
    ("away.js", include_str!("../../assets/widget/panel/away.js")),
    (
        "prechat.js",
        include_str!("../../assets/widget/panel/prechat.js"),
    ),
    (
        "composer.js",
        include_str!("../../assets/widget/panel/composer.js"),
    ),
];

/// The panel's whole script, before compaction: the parts in one async function, so nothing they
/// declare reaches the host page, and the panel can wait for its language file.
pub(super) fn panel_source() -> String {
    let mut source = String::from("(async () => {\n");
    for (_, part) in PARTS {
        source.push_str(part);
    }
    source.push_str("})();\n");
    source
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part is in the list, so none is left out of what is served.
    #[test]
    fn every_file_of_the_panel_directory_is_a_part() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/widget/panel");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .expect("the panel's directory")
            .map(|entry| {
                entry
                    .expect("entry")
                    .file_name()
                    .into_string()
                    .expect("name")
            })
            .collect();
        files.sort();
        let mut listed: Vec<&str> = PARTS.iter().map(|(name, _)| *name).collect();
        listed.sort_unstable();
        assert_eq!(files, listed);
    }

    /// The strict-mode directive only counts as the function's first statement.
    #[test]
    fn the_parts_are_one_strict_function_body() {
        let served = super::super::compact::compact_js(&panel_source());
        assert!(
            served.starts_with("(async()=>{\n\"use strict\";\n"),
            "{}",
            &served[..60]
        );
        assert!(served.ends_with("\n})();"));
    }
}

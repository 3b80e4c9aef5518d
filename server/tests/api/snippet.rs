//! The embed snippet stays small: the launcher is at most 4 KB gzipped.

use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use porch::values::SiteSettings;

/// The budget from the product brief: the launcher is under 4 KB (gzipped).
const MAX_GZIPPED: usize = 4096;

#[test]
fn the_embed_snippet_is_at_most_4_kb_gzipped() {
    // A fixed language makes the longest snippet (the locale and a label in \u escapes).
    let mut settings = SiteSettings::new("Acme".into(), vec!["https://acme.example".into()]);
    settings.locale = "ar".into();
    let snippet =
        porch::widget::snippet("https://chat.example.com", "s_0123456789abcdef", &settings);
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(snippet.as_bytes()).expect("gzip");
    let gzipped = gz.finish().expect("gzip").len();
    eprintln!(
        "snippet: {} bytes raw, {gzipped} bytes gzipped",
        snippet.len()
    );
    assert!(gzipped <= MAX_GZIPPED, "snippet is {gzipped} bytes gzipped");
    assert!(snippet.starts_with("<script>") && snippet.ends_with("</script>"));
    assert_eq!(
        snippet.matches("</script>").count(),
        1,
        "nothing inside may close the script early"
    );
}

#[test]
fn snippet_values_cannot_break_out_of_the_script() {
    let settings = SiteSettings::new("Acme".into(), vec!["https://acme.example".into()]);
    let snippet = porch::widget::snippet(
        "https://x.example/</script><b>",
        "s_0123456789abcdef",
        &settings,
    );
    assert_eq!(snippet.matches("</script>").count(), 1);
}

//! Which characters show nothing, or turn the text around them: shared by the server (which
//! refuses or drops them in what it takes) and the pages (which write them out where a typed
//! value is shown as evidence, the audit log).

/// Bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069): they
/// change the direction of the text after them, unlike the direction marks, which only weigh
/// as a letter would.
pub fn is_direction_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The direction overrides (U+202D, U+202E) written out, `<U+202E>`: unlike the embeddings and
/// isolates that bidirectional software inserts, they reverse even Latin letters, so a visitor's
/// `https://evil.example/\u{202E}moc.elpmaxe` would read as ending in "example.com". Where a
/// visitor's message is shown to agents (the conversation, the inbox's preview, search), the
/// agent sees that one was typed instead.
pub fn overrides_written_out(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\u{202D}', '\u{202E}']) {
        return text.into();
    }
    text.replace('\u{202D}', "<U+202D>")
        .replace('\u{202E}', "<U+202E>")
        .into()
}

/// Characters that show nothing: a body of these and white space alone reads as empty. Unicode's
/// default-ignorable code points (zero width space and joiners, word joiner and invisible
/// operators, byte order mark, soft hyphen, direction marks, overrides and isolates, variation
/// selectors, tags, Hangul fillers, Mongolian and Khmer format characters, musical formatting)
/// and the blank braille pattern, which fonts draw as nothing.
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}'
        | '\u{17B5}' | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{2800}' | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}'
        | '\u{1BCA0}'..='\u{1BCA3}' | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

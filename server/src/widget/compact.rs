//! The panel's script and styles as served: the sources keep their comments and indentation for
//! the next engineer, and visitors download neither. Compacting once at start-up (not a build
//! step) keeps the repository's files what runs, and drops about a fifth of the gzipped panel
//! (docs/widget.md, "Size"), which the panel's 16 KiB budget needs since attachments, hours and
//! languages.
//!
//! The rules are line-based and deliberately small, so they cannot change what the code means:
//! - JS: each line is trimmed, and empty lines and lines that are only a `//` comment go. Line
//!   breaks stay (automatic semicolon insertion keeps working). A comment after code goes only
//!   when the code before it has no quote, backtick or slash: a `//` inside a string, a template
//!   or a regular expression always has one of those before it on its line. This is only sound
//!   while no string or template literal spans lines, which a test below checks on the panel's parts.
//! - JS, then, on a line with no `/` outside its string and template literals (a regular
//!   expression or a division; neither is told apart, so such a line is left as it is): spaces
//!   outside literals go, except between two characters of names or numbers (`const a`,
//!   `return x`; `_`, `$` and `\` count as such), between `+` and `+` or `-` and `-` (`a - -b`),
//!   where they separate tokens, and where joining would start something else: `<` before `!`
//!   (`<!--` opens a comment in a script) and a digit before `.` (`1 .toString()`).
//!   A template literal is taken whole from backtick to backtick, which holds while none nests
//!   another (checked below).
//! - CSS: `/* … */` comments go (the panel's CSS has no string containing `/*`, also checked). Then,
//!   outside strings, a run of white space (line breaks included) becomes one space, or none next
//!   to `{`, `}`, `;` and `,` or after a `:` (a space before a `:` stays: in a selector it is the
//!   descendant combinator, as in `.panel :focus-visible`), and a `;` before `}` goes.

/// `source` without comment-only lines, indentation, empty lines and the spaces that separate no
/// tokens (see the module's rules).
pub fn compact_js(source: &str) -> String {
    let kept: Vec<std::borrow::Cow<'_, str>> = source
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .map(without_trailing_comment)
        .map(without_spaces)
        .collect();
    kept.join("\n")
}

/// `line` without the spaces that separate no tokens (see the module's rules), or as it is when
/// it has a `/` outside its literals.
fn without_spaces(line: &str) -> std::borrow::Cow<'_, str> {
    let joins = |a: char, b: char| {
        let word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '\\');
        (word(a) && word(b))
            || (a == b && matches!(a, '+' | '-'))
            || (a == '<' && b == '!')
            || (a.is_ascii_digit() && b == '.')
    };
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    let mut space = false;
    while let Some(c) = chars.next() {
        if c == ' ' {
            space = true;
            continue;
        }
        if c == '/' {
            return line.into();
        }
        if space && out.chars().next_back().is_some_and(|a| joins(a, c)) {
            out.push(' ');
        }
        space = false;
        out.push(c);
        if matches!(c, '"' | '\'' | '`') {
            // The literal, escapes included, up to its closing quote.
            while let Some(inner) = chars.next() {
                out.push(inner);
                if inner == '\\' {
                    out.extend(chars.next());
                } else if inner == c {
                    break;
                }
            }
        }
    }
    out.into()
}

/// `line` without a `//` comment after its code, when nothing before the comment could hold a
/// `//` of its own (a string, a template, a regular expression).
fn without_trailing_comment(line: &str) -> &str {
    match line.split_once(" //") {
        Some((code, _)) if !code.contains(['"', '\'', '`', '/']) => code.trim_end(),
        _ => line,
    }
}

/// `source` without comments and the white space nothing needs.
pub fn compact_css(source: &str) -> String {
    let mut uncommented = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("/*") {
        uncommented.push_str(&rest[..start]);
        rest = rest[start..]
            .find("*/")
            .map_or("", |end| &rest[start + end + 2..]);
    }
    uncommented.push_str(rest);
    squeeze_css(&uncommented)
}

/// CSS without the white space that separates nothing (see the module's rules).
fn squeeze_css(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut quote: Option<char> = None;
    let mut space = false;
    for c in css.chars() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        let after_punctuation = out.ends_with(['{', '}', ';', ',', ':']);
        if space && !after_punctuation && !matches!(c, '{' | '}' | ';' | ',') {
            out.push(' ');
        }
        space = false;
        if c == '}' && out.ends_with(';') {
            out.pop();
        }
        if c == '"' || c == '\'' {
            quote = Some(c);
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widget::panel_source::{PARTS, panel_source};

    const PANEL_CSS: &str = include_str!("../../assets/widget/panel.css");

    #[test]
    fn js_loses_comments_and_indentation_but_keeps_line_breaks_and_anything_in_a_literal() {
        let source = "// header\n  const a = 1; // why\n\n    // note\n  const b = `x // y`;\n";
        assert_eq!(compact_js(source), "const a=1;\nconst b=`x // y`;");
        // A `//` after a quote, a backtick or a slash may be inside a literal: it stays.
        for kept in [
            "const u = \"http://x\"; // why",
            "const u = 'a' + b; // why",
            "f(`${a}`); // why",
            "const r = /a\\/ //b/; // why",
            "a = b / c; // why",
        ] {
            assert_eq!(compact_js(kept), kept);
        }
    }

    #[test]
    fn js_loses_spaces_between_tokens_but_not_in_literals_or_where_they_part_tokens() {
        for (source, served) in [
            (
                "if (a === b) { f(x, \"a b\", 'c \\' d', `e ${ g } f`); }",
                "if(a===b){f(x,\"a b\",'c \\' d',`e ${ g } f`);}",
            ),
            (
                "const f = async (el) => await el.x ? c : d;",
                "const f=async(el)=>await el.x?c:d;",
            ),
            ("return a - -b + +c - d;", "return a- -b+ +c-d;"),
            (
                "if (a < !--b) f(1 .toString());",
                "if(a< !--b)f(1 .toString());",
            ),
            ("let $a = _b in obj;", "let $a=_b in obj;"),
        ] {
            assert_eq!(compact_js(source), served);
        }
        // A slash outside a literal may start a regular expression, whose spaces count.
        for kept in ["const re = / a, b /g;", "x = a / b;", "x = \"/\" + a / b;"] {
            assert_eq!(compact_js(kept), kept);
        }
    }

    #[test]
    fn css_loses_comments_and_the_white_space_nothing_needs() {
        let source = "/* a\n  long one */\n.a {\n  color: red; /* why */\n}\n\n.b { content: \"a: b, c; \"; }\n";
        assert_eq!(
            compact_css(source),
            ".a{color:red}.b{content:\"a: b, c; \"}"
        );
        assert_eq!(compact_css("a /* never closed"), "a");
        // What white space means stays: a descendant `:focus-visible`, values, calc's operators.
        let meaningful = ".p :focus-visible,\n.q > .r {\n  margin: 0 auto;\n  width: calc(100% - 2px) !important;\n}\n@media (max-width: 480px) and (hover: none) {\n  .s { font: 15px/1.4 \"Segoe UI\", sans-serif; }\n}";
        assert_eq!(
            compact_css(meaningful),
            ".p :focus-visible,.q > .r{margin:0 auto;width:calc(100% - 2px) !important}@media (max-width:480px) and (hover:none){.s{font:15px/1.4 \"Segoe UI\",sans-serif}}"
        );
    }

    /// Trimming lines would change a string or template literal that spans lines, so the panel
    /// must have none: every line closes each backtick it opens. And a template nested in
    /// another's `${…}` would end the outer one early for the spaces' rule: there is none.
    #[test]
    fn no_template_literal_in_the_widget_spans_lines_or_nests() {
        let launcher = (
            "launcher.js",
            include_str!("../../assets/widget/launcher.js"),
        );
        for (name, part) in PARTS.into_iter().chain([launcher]) {
            for (n, line) in part.lines().enumerate() {
                assert!(
                    line.matches('`').count() % 2 == 0,
                    "{name}:{} opens a template literal it does not close",
                    n + 1
                );
                assert!(
                    !line.trim_end().ends_with('\\'),
                    "{name}:{} continues a string on the next line",
                    n + 1
                );
                assert!(
                    !nests_a_template(line),
                    "{name}:{} nests a template literal",
                    n + 1
                );
            }
        }
    }

    /// Whether a backtick appears inside a `${…}` of `line` (braces counted, so an object
    /// literal in the expression does not end it early).
    fn nests_a_template(line: &str) -> bool {
        let mut depth = 0_usize;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '$' if depth == 0 && chars.peek() == Some(&'{') => {
                    chars.next();
                    depth = 1;
                }
                '{' if depth > 0 => depth += 1,
                '}' if depth > 0 => depth -= 1,
                '`' if depth > 0 => return true,
                _ => {}
            }
        }
        false
    }

    #[test]
    fn a_template_nested_after_an_inner_brace_is_found() {
        assert!(nests_a_template("f(`${g({a: 1}) + `x: y`}`)"));
        assert!(!nests_a_template("f(`${g({a: 1})} x`, `${b}`)"));
    }

    #[test]
    fn no_css_string_holds_a_comment_opener() {
        for line in PANEL_CSS.lines() {
            if let Some((_, string)) = line.split_once('"') {
                assert!(!string.contains("/*"), "{line}");
            }
        }
    }

    #[test]
    fn the_compacted_panel_is_smaller_and_keeps_every_statement_line() {
        let source = panel_source();
        let js = compact_js(&source);
        assert!(
            js.len() < source.len() * 9 / 10,
            "{} of {}",
            js.len(),
            source.len()
        );
        let code_lines = source
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .count();
        assert_eq!(js.lines().count(), code_lines);
        assert!(compact_css(PANEL_CSS).len() < PANEL_CSS.len());
    }
}

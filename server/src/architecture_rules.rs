//! The layer rules of docs/architecture.md, checked by reading the source (test-only). A rule
//! names the files it covers (a folder or file under `src/`), a path they must not use, the
//! paths under it that stay allowed, and why; a broken rule fails with file, line and reason.
//! Paths are found in `use` trees and inline in code; comments and literals are skipped.

use std::path::{Path, PathBuf};

/// One layer rule. Add a rule with one line in [`RULES`].
struct Rule {
    /// Files it covers: those whose path under `src/` starts with this (`store/`, `clock.rs`).
    files: &'static str,
    /// A path they must not use: a module (`crate::admin`) or an outside crate (`axum`). The
    /// files' own module (`crate::store` for `store/`) is always allowed.
    forbidden: &'static str,
    /// Other paths under `forbidden` that stay allowed.
    allowed: &'static [&'static str],
    reason: &'static str,
}

impl Rule {
    const fn new(files: &'static str, forbidden: &'static str, reason: &'static str) -> Self {
        Self {
            files,
            forbidden,
            allowed: &[],
            reason,
        }
    }

    const fn allowing(self, allowed: &'static [&'static str]) -> Self {
        Self { allowed, ..self }
    }

    fn is_broken_by(&self, path: &str) -> bool {
        let own = format!(
            "crate::{}",
            self.files
                .trim_end_matches('/')
                .trim_end_matches(".rs")
                .replace('/', "::")
        );
        is_under(path, self.forbidden)
            && !is_under(path, &own)
            && !self.allowed.iter().any(|a| is_under(path, a))
    }
}

/// The leaf modules: each imports nothing from the crate (a rule below each keeps it so), so
/// even the store may use them.
const LEAVES: &[&str] = &[
    "crate::clock",
    "crate::histogram",
    "crate::log_limit",
    "crate::secrets",
    "crate::series",
    "crate::values",
];

#[rustfmt::skip] // One rule a line: the list reads as a table.
const RULES: &[Rule] = &[
    Rule::new("store/", "crate", "the store imports nothing above it").allowing(LEAVES),
    Rule::new("store/", "axum", "the store knows nothing of HTTP"),
    Rule::new("clock.rs", "crate", "a leaf imports nothing from the crate"),
    Rule::new("histogram.rs", "crate", "a leaf imports nothing from the crate"),
    Rule::new("series.rs", "crate", "a leaf imports nothing from the crate"),
    Rule::new("log_limit.rs", "crate", "a leaf imports nothing from the crate"),
    Rule::new("values/", "crate", "a leaf imports nothing from the crate"),
    Rule::new("secrets/", "crate", "a leaf imports nothing from the crate (the store carries sealed values)"),
    Rule::new("chat/", "axum", "the domain knows nothing of HTTP"),
    Rule::new("chat/", "crate::http", "the domain knows nothing of HTTP"),
    Rule::new("accounts/", "axum", "accounts know nothing of HTTP"),
    Rule::new("accounts/", "crate::http", "accounts know nothing of HTTP"),
    Rule::new("accounts/", "crate::admin", "admin uses accounts, not the reverse"),
    Rule::new("loadtest/", "crate::admin", "the load test and the admin UI share only metrics"),
    Rule::new("admin/", "crate::loadtest", "the load test and the admin UI share only metrics"),
    Rule::new("metrics/", "crate::loadtest", "the load test writes into metrics, not back"),
    Rule::new("metrics/", "crate::admin", "the admin UI reads metrics, not the reverse"),
    Rule::new("jobs/", "crate::integrations", "the runner calls deliveries through the Deliver trait"),
    Rule::new("jobs/", "crate::state", "jobs take what they need, not the whole App"),
    Rule::new("jobs/", "axum", "jobs know nothing of HTTP"),
    Rule::new("jobs/", "crate::http", "jobs know nothing of HTTP"),
    Rule::new("integrations/", "crate::state", "integrations take narrow handles, not the whole App"),
    Rule::new("integrations/", "axum", "HTTP endpoints of integrations live in http"),
    Rule::new("integrations/", "crate::http", "setup errors are mapped to HTTP in http, once"),
    Rule::new("integrations/", "crate::admin", "the admin UI uses integrations, not the reverse"),
    Rule::new("audit/", "axum", "the audit log knows nothing of HTTP"),
    Rule::new("audit/", "crate::http", "the audit log knows nothing of HTTP"),
    Rule::new("audit/", "crate::admin", "the admin UI reads the audit log, not the reverse"),
    Rule::new("chat/", "crate::integrations", "the domain plans jobs; deliveries are the runner's"),
    Rule::new("privacy/", "axum", "privacy use cases know nothing of HTTP"),
    Rule::new("privacy/", "crate::http", "privacy use cases know nothing of HTTP"),
    Rule::new("privacy/", "crate::admin", "the admin UI uses privacy, not the reverse"),
    Rule::new("attachments/", "axum", "attachments know nothing of HTTP"),
    Rule::new("attachments/", "crate::http", "attachments know nothing of HTTP"),
    Rule::new("attachments/", "crate::widget", "the widget uses attachments, not the reverse"),
];

/// Whether `path` is `prefix` or lies under it.
fn is_under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
}

/// A lexical token with the line it is on.
#[derive(Debug)]
struct Token {
    text: String,
    line: usize,
}

/// Identifiers, `::` and single punctuation, with comments, string and character literals,
/// numbers and lifetimes left out (a path inside them is not a use).
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while let Some(c) = at(i) {
        let next = at(i + 1);
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && next == Some('/') {
            while at(i).is_some_and(|c| c != '\n') {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while let Some(c) = at(i) {
                match (c, at(i + 1)) {
                    ('/', Some('*')) => (depth, i) = (depth + 1, i + 2),
                    ('*', Some('/')) => (depth, i) = (depth - 1, i + 2),
                    _ => (line, i) = (line + usize::from(c == '\n'), i + 1),
                }
                if depth == 0 {
                    break;
                }
            }
        } else if c == '"' {
            i = skip_string(&chars, i + 1, None, &mut line);
        } else if c == '\'' {
            // A character literal (`'"'`, `'\''`), or else a lifetime or label.
            i += match (next, at(i + 2)) {
                (Some('\\'), _) => (i + 3..chars.len())
                    .find(|&j| chars[j] == '\'')
                    .map_or(chars.len(), |j| j + 1 - i),
                (_, Some('\'')) => 3,
                _ => 1,
            };
        } else if c.is_ascii_digit() {
            while at(i).is_some_and(is_ident) {
                i += 1;
            }
        } else if is_ident(c) {
            let start = i;
            while at(i).is_some_and(is_ident) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let hashes = (i..chars.len()).take_while(|&j| chars[j] == '#').count();
            match (word.as_str(), at(i + hashes)) {
                ("r" | "br" | "cr", Some('"')) => {
                    i = skip_string(&chars, i + hashes + 1, Some(hashes), &mut line);
                }
                ("b" | "c", Some('"')) if hashes == 0 => {
                    i = skip_string(&chars, i + 1, None, &mut line);
                }
                // A raw identifier (`r#type`): the identifier follows.
                ("r", _) if hashes == 1 => i += 1,
                _ => out.push(Token { text: word, line }),
            }
        } else if c == ':' && next == Some(':') {
            out.push(Token {
                text: "::".to_owned(),
                line,
            });
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(Token {
                    text: c.to_string(),
                    line,
                });
            }
            i += 1;
        }
    }
    out
}

/// The index just past a string literal whose body starts at `i`. A raw one (`Some` with its
/// number of `#`) has no escapes and ends at a `"` followed by as many `#`.
fn skip_string(chars: &[char], mut i: usize, raw: Option<usize>, line: &mut usize) -> usize {
    while let Some(&c) = chars.get(i) {
        *line += usize::from(c == '\n');
        match (c, raw) {
            ('\\', None) => {
                *line += usize::from(chars.get(i + 1) == Some(&'\n'));
                i += 2;
            }
            ('"', None) => return i + 1,
            ('"', Some(hashes))
                if chars[i + 1..]
                    .iter()
                    .take(hashes)
                    .filter(|&&h| h == '#')
                    .count()
                    == hashes =>
            {
                return i + 1 + hashes;
            }
            _ => i += 1,
        }
    }
    i
}

/// A path the source uses; one that starts at `self` or `super` is resolved to start at `crate`.
#[derive(Debug, PartialEq)]
struct Used {
    line: usize,
    path: String,
}

fn is_ident(text: &str) -> bool {
    text.starts_with(|c: char| c.is_alphabetic() || c == '_')
}

/// Every path `source` uses: each leaf of each `use` tree, and each path written inline in code
/// (`crate::store::insert_message(`). `module` is the file's own module path.
fn paths_used(source: &str, module: &[String]) -> Vec<Used> {
    let tokens = tokens(source);
    let text = |i: usize| tokens.get(i).map_or("", |t| t.text.as_str());
    let mut out = Vec::new();
    // The module path inside inline modules (`mod tests { … }`), each with the brace depth its
    // body is at, so `super` in a test module resolves from the test module.
    let mut here: Vec<(String, usize)> = module.iter().map(|m| (m.clone(), 0)).collect();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        let starts_path = is_ident(text(i))
            && text(i + 1) == "::"
            && (text(i.wrapping_sub(1)) != "::"
                || !(is_ident(text(i.wrapping_sub(2))) || text(i.wrapping_sub(2)) == ">"));
        match text(i) {
            "{" => depth += 1,
            "}" => {
                if here.last().is_some_and(|(_, d)| *d == depth) {
                    here.pop();
                }
                depth = depth.saturating_sub(1);
            }
            "mod" if text(i + 2) == "{" => here.push((text(i + 1).to_owned(), depth + 1)),
            "use" => {
                let mut leaves = Vec::new();
                let end = use_tree(&tokens, i + 1, Vec::new(), &mut leaves);
                out.extend(leaves.into_iter().map(|(segments, line)| Used {
                    line,
                    path: resolve(&segments, &here),
                }));
                i = end.max(i + 1);
                continue;
            }
            _ if starts_path => {
                let mut segments = vec![text(i).to_owned()];
                while text(i + 1) == "::" && is_ident(text(i + 2)) {
                    segments.push(text(i + 2).to_owned());
                    i += 2;
                }
                out.push(Used {
                    line: tokens[i].line,
                    path: resolve(&segments, &here),
                });
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Parses the use tree at `i` under `prefix`, adding each leaf path with its line to `leaves`
/// (a glob adds its prefix); returns the index just past the tree.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    mut prefix: Vec<String>,
    leaves: &mut Vec<(Vec<String>, usize)>,
) -> usize {
    let text = |i: usize| tokens.get(i).map_or("", |t| t.text.as_str());
    loop {
        match text(i) {
            "::" => i += 1,
            "{" => {
                i += 1;
                while !matches!(text(i), "}" | "") {
                    let next = use_tree(tokens, i, prefix.clone(), leaves);
                    i = if text(next) == "," {
                        next + 1
                    } else {
                        next.max(i + 1)
                    };
                }
                return i + 1;
            }
            "*" => {
                leaves.push((prefix, tokens[i].line));
                return i + 1;
            }
            word if is_ident(word) => {
                let line = tokens[i].line;
                prefix.push(word.to_owned());
                i += 1;
                if text(i) == "::" {
                    continue;
                }
                if text(i) == "as" {
                    i += 2;
                }
                leaves.push((prefix, line));
                return i;
            }
            _ => return i,
        }
    }
}

/// `segments` as one path, starting at `crate` if it started at `self` or `super` (seen from
/// module `here`); a trailing `self` (`use crate::store::{self, …}`) names its parent.
fn resolve(segments: &[String], here: &[(String, usize)]) -> String {
    let ups = segments.iter().take_while(|s| *s == "super").count();
    let mut path: Vec<&str> = Vec::new();
    if ups > 0 || segments.first().is_some_and(|s| s == "self") {
        path.push("crate");
        path.extend(
            here[..here.len().saturating_sub(ups)]
                .iter()
                .map(|(m, _)| m.as_str()),
        );
    }
    let rest = segments.iter().skip(if ups > 0 {
        ups
    } else {
        usize::from(!path.is_empty())
    });
    path.extend(rest.map(String::as_str).filter(|s| *s != "self"));
    path.join("::")
}

/// The module path of a file under `src/`: `store/writer.rs` is `store::writer`, `store/mod.rs`
/// is `store`, `lib.rs` is the crate root.
fn module_of(relative: &str) -> Vec<String> {
    let stem = relative.strip_suffix(".rs").unwrap_or(relative);
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    if stem == "lib" {
        return Vec::new();
    }
    stem.split('/').map(str::to_owned).collect()
}

/// Every `.rs` file under `dir`, as paths relative to `root` with `/` separators.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the source folder is readable")
        .map(|e| e.expect("a readable folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(root).expect("under the root");
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn source_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn the_layer_rules_hold() {
    let root = source_root();
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files);
    let mut broken = Vec::new();
    for file in &files {
        let rules: Vec<&Rule> = RULES.iter().filter(|r| file.starts_with(r.files)).collect();
        if rules.is_empty() {
            continue;
        }
        let source = std::fs::read_to_string(root.join(file)).expect("a readable source file");
        for used in paths_used(&source, &module_of(file)) {
            for rule in rules.iter().filter(|r| r.is_broken_by(&used.path)) {
                broken.push(format!(
                    "server/src/{file}:{}: uses `{}`, but {} (rule: `{}` must not use `{}`)",
                    used.line, used.path, rule.reason, rule.files, rule.forbidden
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "layer rules broken (see docs/architecture.md):\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_rule_covers_files_that_exist() {
    // A renamed folder must not silently switch its rules off.
    for rule in RULES {
        assert!(
            source_root().join(rule.files).exists(),
            "no server/src/{} for the rule on `{}`",
            rule.files,
            rule.forbidden
        );
    }
}

mod tests {
    use super::*;

    fn used(source: &str) -> Vec<(usize, String)> {
        let module = module_of("store/writer.rs");
        paths_used(source, &module)
            .into_iter()
            .map(|u| (u.line, u.path))
            .filter(|(_, p)| p.starts_with("crate") || p.starts_with("axum"))
            .collect()
    }

    #[test]
    fn grouped_and_nested_uses_name_each_leaf_on_its_line() {
        let source = "use crate::{\n    metrics::{Meters, LogHistogram as H},\n    store::{self, Writer},\n};\nuse axum::*;\n";
        assert_eq!(
            used(source),
            [
                (2, "crate::metrics::Meters".to_owned()),
                (2, "crate::metrics::LogHistogram".to_owned()),
                (3, "crate::store".to_owned()),
                (3, "crate::store::Writer".to_owned()),
                (5, "axum".to_owned()),
            ]
        );
    }

    #[test]
    fn inline_paths_are_found_but_not_the_middle_of_one() {
        let source = "fn f() {\n    let x = crate::admin::session::name(1);\n    Vec::<u8>::new();\n    ::axum::serve(x);\n}\n";
        assert_eq!(
            used(source),
            [
                (2, "crate::admin::session::name".to_owned()),
                (4, "axum::serve".to_owned()),
            ]
        );
    }

    #[test]
    fn comments_and_literals_are_not_uses() {
        let source = concat!(
            "// use crate::admin;\n",
            "/* crate::admin::x /* nested */ crate::admin */\n",
            "let a = \"crate::admin::x \\\" crate::admin\";\n",
            "let b = r##\"crate::admin \"# crate::admin\"##;\n",
            "let c = ('\"', '\\'', b'x', 'a');\n",
            "fn g<'a>(x: &'a str) -> crate::clock::Ms { crate::clock::now() }\n",
        );
        assert_eq!(
            used(source),
            [
                (6, "crate::clock::Ms".to_owned()),
                (6, "crate::clock::now".to_owned()),
            ]
        );
    }

    #[test]
    fn self_and_super_resolve_from_the_module_they_are_in() {
        let source = "use super::Error;\nuse self::inner::X;\nmod tests {\n    use super::super::super::metrics;\n}\nuse super::super::admin;\n";
        assert_eq!(
            used(source),
            [
                (1, "crate::store::Error".to_owned()),
                (2, "crate::store::writer::inner::X".to_owned()),
                (4, "crate::metrics".to_owned()),
                (6, "crate::admin".to_owned()),
            ]
        );
    }

    #[test]
    fn a_rule_allows_its_own_module_and_what_it_lists_not_what_merely_shares_a_prefix() {
        let rule = Rule::new("store/", "crate", "why").allowing(&["crate::clock"]);
        assert!(!rule.is_broken_by("crate::store::Writer"));
        assert!(!rule.is_broken_by("crate::clock::now_ms"));
        assert!(rule.is_broken_by("crate::storefront"));
        assert!(rule.is_broken_by("crate::metrics"));
        assert!(!rule.is_broken_by("crater::x"));
        let leaf = Rule::new("clock.rs", "crate", "why");
        assert!(!leaf.is_broken_by("crate::clock::tests"));
        assert!(leaf.is_broken_by("crate::store"));
    }
}

//! The documentation of this version, compiled into the binary and shown to signed-in people at
//! `/docs/{path}` (`/docs` lists it). The pages point to it ("Setup steps are in
//! docs/integrations/slack.md"), and someone who has only the image or the binary has no other
//! copy. Rendered from the Markdown with GitHub's tables and heading anchors, so the same
//! `#fragment` works here and on a code host; links between docs stay inside `/docs`, links to
//! anything else of the repository (source files, tests) become plain text.

use std::collections::HashMap;

use leptos::prelude::*;
use pulldown_cmark::{CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use crate::layout::{Nav, document};

/// One document: its path under `docs/` and its Markdown.
pub struct Doc {
    pub path: &'static str,
    pub text: &'static str,
}

macro_rules! docs {
    ($($path:literal),* $(,)?) => {
        &[$(Doc { path: $path, text: include_str!(concat!("../../docs/", $path)) }),*]
    };
}

/// Every document, in the order `/docs` lists them (a test checks that none is missing).
pub const DOCS: &[Doc] = docs![
    "admin.md",
    "widget.md",
    "integrations/slack.md",
    "integrations/discord.md",
    "integrations/webhooks.md",
    "integrations/email.md",
    "configuration.md",
    "operations.md",
    "privacy.md",
    "sso.md",
    "api.md",
    "widget-protocol.md",
    "jobs.md",
    "architecture.md",
    "capacity.md",
];

/// The document at `path` (as under `docs/`, such as `integrations/slack.md`).
#[must_use]
pub fn find(path: &str) -> Option<&'static Doc> {
    DOCS.iter().find(|d| d.path == path)
}

/// The document's title: its first heading's text, else its path.
fn title(doc: &Doc) -> String {
    doc.text
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .map_or_else(|| doc.path.to_owned(), |t| t.replace('`', ""))
}

/// GitHub's anchor for a heading's text: lower case; letters, digits, `-` and `_` kept, spaces
/// made `-`, everything else dropped.
#[must_use]
pub fn slug(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// Where a link in the document `from` leads here: a page of the UI for another document
/// (`/docs/…#…`), the same for a fragment or an outside address, or `None` for a file of the
/// repository that is not a document.
fn resolve(from: &str, dest: &str) -> Option<String> {
    if dest.starts_with('#') || dest.starts_with("https://") || dest.starts_with("http://") {
        return Some(dest.to_owned());
    }
    if dest.contains(':') {
        return None;
    }
    let (path, fragment) = dest.split_once('#').map_or((dest, ""), |(p, f)| (p, f));
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    let target = parts.join("/");
    find(&target)?;
    Some(if fragment.is_empty() {
        format!("/docs/{target}")
    } else {
        format!("/docs/{target}#{fragment}")
    })
}

/// The document as HTML: headings with their anchors, links resolved, and any HTML in the
/// Markdown shown as text (the docs hold none on purpose; none is passed through).
#[must_use]
pub fn render(doc: &Doc) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    let events: Vec<Event<'_>> = Parser::new_ext(doc.text, options).collect();
    let mut out = Vec::with_capacity(events.len());
    let mut seen: HashMap<String, usize> = HashMap::new();
    // For each open link: whether it was kept (a dropped one's text stays, unlinked).
    let mut links = Vec::new();
    // The section a table or code block is in, which names its scrolling box.
    let mut section = String::from("Document");
    // How many boxes each name has had, so that a second one in a section is "… (2)": two
    // regions of one name cannot be told apart in a screen reader's list of landmarks.
    let mut box_names: HashMap<String, usize> = HashMap::new();
    let mut i = 0;
    while i < events.len() {
        match &events[i] {
            Event::Start(Tag::Heading { level, .. }) => {
                let end = events[i..]
                    .iter()
                    .position(|e| matches!(e, Event::End(TagEnd::Heading(_))))
                    .map_or(events.len(), |n| i + n);
                let text: String = events[i + 1..end]
                    .iter()
                    .filter_map(|e| match e {
                        Event::Text(t) | Event::Code(t) => Some(t.as_ref()),
                        _ => None,
                    })
                    .collect();
                out.push(heading(*level, &text, &mut seen));
                section.clone_from(&text);
            }
            Event::Start(tag @ (Tag::Table(_) | Tag::CodeBlock(_))) => {
                let what = if matches!(tag, Tag::Table(_)) {
                    "Table"
                } else {
                    "Example"
                };
                let mut name = format!("{what} in “{section}”");
                let count = box_names.entry(name.clone()).or_insert(0);
                *count += 1;
                if *count > 1 {
                    name = format!("{name} ({count})");
                }
                out.push(scroll_box_start(&name));
                out.push(events[i].clone());
            }
            Event::End(TagEnd::Table | TagEnd::CodeBlock) => {
                out.push(events[i].clone());
                out.push(Event::Html(CowStr::from("</div>")));
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => match resolve(doc.path, dest_url) {
                Some(dest) => {
                    links.push(true);
                    out.push(Event::Start(Tag::Link {
                        link_type: *link_type,
                        dest_url: CowStr::from(dest),
                        title: title.clone(),
                        id: id.clone(),
                    }));
                }
                None => links.push(false),
            },
            Event::End(TagEnd::Link) => {
                if links.pop().unwrap_or(false) {
                    out.push(Event::End(TagEnd::Link));
                }
            }
            Event::Html(raw) | Event::InlineHtml(raw) => out.push(Event::Text(raw.clone())),
            other => out.push(other.clone()),
        }
        i += 1;
    }
    let mut html = String::with_capacity(doc.text.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, out.into_iter());
    html
}

/// The opening of the box a wide table or code block scrolls in: Tab reaches it, so the arrow
/// keys scroll it, and it is named for screen readers by what it is and its section (as the
/// admin pages' wide tables, docs/admin.md), numbered from the second of a name on. `keys.js`
/// keeps that only on the boxes that do scroll, so a long document is not dozens of tab stops
/// and landmarks; `data-label` keeps the name for when a narrower window makes one scroll.
fn scroll_box_start(name: &str) -> Event<'static> {
    let label = name
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    Event::Html(CowStr::from(format!(
        "<div class=\"table-scroll doc-scroll\" tabindex=\"0\" role=\"region\" aria-label=\"{label}\" data-label=\"{label}\">"
    )))
}

/// A heading's start with its anchor; a repeated anchor gets `-1`, `-2`, … as on GitHub.
fn heading<'a>(level: HeadingLevel, text: &str, seen: &mut HashMap<String, usize>) -> Event<'a> {
    let base = slug(text);
    let count = seen.entry(base.clone()).or_insert(0);
    let id = if *count == 0 {
        base
    } else {
        format!("{base}-{count}")
    };
    *count += 1;
    Event::Start(Tag::Heading {
        level,
        id: Some(CowStr::from(id)),
        classes: Vec::new(),
        attrs: Vec::new(),
    })
}

/// The page of one document.
#[must_use]
pub fn render_doc(nav: Nav, doc: &Doc) -> String {
    let html = render(doc);
    let content = view! {
        <p class="crumb"><a href="/docs">"← All docs"</a></p>
        <article class="doc card" inner_html=html></article>
    };
    document(&title(doc), Some(nav), false, content.into_any())
}

/// `/docs`: every document with its title.
#[must_use]
pub fn render_index(nav: Nav) -> String {
    let items = DOCS
        .iter()
        .map(|doc| {
            view! {
                <li><a href=format!("/docs/{}", doc.path)>{title(doc)}</a>
                    " "<span class="muted mono">{doc.path}</span></li>
            }
        })
        .collect_view();
    let content = view! {
        <div class="page-head">
            <h1>"Docs"</h1>
            <p class="muted">"The documentation of this version of Porch."</p>
        </div>
        <ul class="card doc-list">{items}</ul>
    };
    document("Docs", Some(nav), false, content.into_any())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_githubs() {
        assert_eq!(slug("The flood brake"), "the-flood-brake");
        assert_eq!(
            slug("`GET /api/v1/jobs?state=failed`"),
            "get-apiv1jobsstatefailed"
        );
        assert_eq!(
            slug("No stalls (issue #19 item 3): a thread, tried (2026-12-02)"),
            "no-stalls-issue-19-item-3-a-thread-tried-2026-12-02"
        );
        assert_eq!(slug("Émile’s page_name"), "émiles-page_name");
    }

    #[test]
    fn links_between_docs_stay_in_docs_and_others_become_text() {
        assert_eq!(
            resolve("integrations/slack.md", "../jobs.md#blocking").as_deref(),
            Some("/docs/jobs.md#blocking")
        );
        assert_eq!(
            resolve("admin.md", "integrations/email.md").as_deref(),
            Some("/docs/integrations/email.md")
        );
        assert_eq!(resolve("admin.md", "#pages").as_deref(), Some("#pages"));
        assert_eq!(resolve("admin.md", "../server/src/hub.rs"), None);
        assert_eq!(resolve("admin.md", "../../etc/passwd"), None);
        assert_eq!(resolve("admin.md", "javascript:alert(1)"), None);
        let html = render(&Doc {
            path: "x.md",
            text: "# A\n\nSee [jobs](jobs.md#b), [the code](../server/src/a.rs) and <b>this</b>.\n\n## A\n",
        });
        assert!(html.contains(r#"<h1 id="a">A</h1>"#), "{html}");
        assert!(html.contains(r#"<h2 id="a-1">A</h2>"#), "{html}");
        assert!(
            html.contains(r#"<a href="/docs/jobs.md#b">jobs</a>"#),
            "{html}"
        );
        assert!(
            html.contains(" the code and &lt;b&gt;this&lt;/b&gt;."),
            "{html}"
        );
    }

    #[test]
    fn tables_and_code_scroll_in_boxes_that_tab_reaches_and_that_are_named() {
        let html = render(&Doc {
            path: "x.md",
            text: "# Top\n\n## The \"rules\" & more\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```sh\nporch serve\n```\n",
        });
        let table = r#"<div class="table-scroll doc-scroll" tabindex="0" role="region" aria-label="Table in “The &quot;rules&quot; &amp; more”" data-label="Table in “The &quot;rules&quot; &amp; more”"><table>"#;
        assert!(html.contains(table), "{html}");
        let code = "data-label=\"Example in “The &quot;rules&quot; &amp; more”\">\n<pre><code class=\"language-sh\">porch serve";
        assert!(html.contains(code), "{html}");
        assert_eq!(html.matches("</div>").count(), 2, "{html}");
        assert!(html.contains("</table>\n</div>"), "{html}");
    }

    #[test]
    fn two_boxes_of_a_section_have_names_of_their_own() {
        let html = render(&Doc {
            path: "x.md",
            text: "# Top

## Run

```sh
a
```

```sh
b
```

## Run

```sh
c
```
",
        });
        let names: Vec<&str> = html
            .split("aria-label=\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .collect();
        assert_eq!(
            names,
            [
                "Example in “Run”",
                "Example in “Run” (2)",
                "Example in “Run” (3)"
            ]
        );
    }

    /// Every document's HTML, by path.
    fn rendered() -> HashMap<&'static str, String> {
        DOCS.iter().map(|d| (d.path, render(d))).collect()
    }

    /// Whether a link to `path`, at `fragment` (empty: the top), lands on a served document and,
    /// with a fragment, on a heading of it.
    fn lands(rendered: &HashMap<&str, String>, path: &str, fragment: &str) -> bool {
        rendered.get(path).is_some_and(|html| {
            fragment.is_empty() || html.contains(&format!(r#"id="{fragment}""#))
        })
    }

    #[test]
    fn every_document_is_served_and_every_link_between_them_lands_on_a_heading() {
        let mut on_disk: Vec<String> = ["", "integrations/"]
            .iter()
            .flat_map(|dir| {
                let path = format!("{}/../docs/{dir}", env!("CARGO_MANIFEST_DIR"));
                std::fs::read_dir(path)
                    .expect("docs")
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| {
                        std::path::Path::new(n)
                            .extension()
                            .is_some_and(|e| e.eq_ignore_ascii_case("md"))
                    })
                    .map(move |n| format!("{dir}{n}"))
            })
            .collect();
        on_disk.sort();
        let mut served: Vec<String> = DOCS.iter().map(|d| d.path.to_owned()).collect();
        served.sort();
        assert_eq!(served, on_disk, "DOCS lists every document");

        let rendered = rendered();
        let mut broken = Vec::new();
        for doc in DOCS {
            for href in rendered[doc.path].split(r#"href=""#).skip(1) {
                let href = href.split('"').next().unwrap_or_default();
                let (target, fragment) = match href.split_once('#') {
                    Some(("", f)) => (doc.path, f),
                    Some((t, f)) if t.starts_with("/docs/") => (&t[6..], f),
                    _ => continue,
                };
                if !lands(&rendered, target, fragment) {
                    broken.push(format!("{}: {href}", doc.path));
                }
            }
        }
        assert!(
            broken.is_empty(),
            "links to no heading:\n{}",
            broken.join("\n")
        );
    }

    /// The pages' own links into the docs (an integration page's guide, the hours page's
    /// section), read from this crate's source: each names a served document and a heading of it.
    #[test]
    fn every_link_of_the_pages_into_the_docs_lands_on_a_document_and_heading() {
        let dir = format!("{}/src", env!("CARGO_MANIFEST_DIR"));
        let rendered = rendered();
        let mut checked = 0;
        let mut broken = Vec::new();
        // Every source file, in the modules' directories too (`capacity/run.rs`).
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(dir)];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).expect("src").filter_map(Result::ok) {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        // This file's own samples are not links of a page.
        for file in files.iter().filter(|p| !p.ends_with("src/docs.rs")) {
            let source = std::fs::read_to_string(file).expect("source");
            for link in source.split(r#"href="/docs/"#).skip(1) {
                let link = link.split('"').next().unwrap_or_default();
                let (path, fragment) = link.split_once('#').unwrap_or((link, ""));
                if !lands(&rendered, path, fragment) {
                    broken.push(format!("{}: /docs/{link}", file.display()));
                }
                checked += 1;
            }
        }
        assert!(
            checked >= 5,
            "only {checked} links found: the test reads the wrong files"
        );
        assert!(broken.is_empty(), "broken:\n{}", broken.join("\n"));
    }
}

//! Inbox search: turns what an agent typed into a safe FTS5 expression (every word a quoted
//! string, so no input can be FTS5 syntax), runs it over messages and visitors, and splits the
//! store's marked snippets into plain and matched pieces for the page to escape and highlight.
//! Every signed-in user may search every conversation, as the inbox lets them list every one.

use crate::store::{
    self, MARK_END, MARK_START, MESSAGE_WINDOW, MessageHitRow, SearchFilter, VisitorHitRow,
};

use super::{Chat, Error};

/// Message hits on one page of results.
pub const SEARCH_PAGE_SIZE: u32 = 20;
/// Conversations found by their visitor's name or email, shown above the first page.
const VISITOR_HITS: u32 = 10;
/// Messages waiting for the indexer are counted up to this many.
pub const UNINDEXED_CAP: u32 = 10_000;
/// Longest query read, in characters; the rest is ignored.
pub const MAX_QUERY_CHARS: usize = 200;
/// Most words a query uses; the rest are ignored. Each word is one more doclist to intersect.
pub const MAX_QUERY_WORDS: usize = 8;

/// A query, parsed: the FTS5 expressions built from its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTerms {
    messages: String,
    visitors: String,
    /// The visitor a query names by the inbox's label for them ("Visitor #9").
    visitor_id: Option<i64>,
}

/// The visitor id in a query that is the inbox's label for an anonymous visitor, as an agent
/// would type it: `Visitor #9`, `visitor 9`, `#9` or `v9` (the privacy page's form).
fn visitor_label(raw: &str) -> Option<i64> {
    let lowered = raw.trim().to_lowercase();
    let (named, rest) = match lowered.strip_prefix("visitor") {
        Some(rest) => (true, rest.trim_start()),
        None => lowered
            .strip_prefix('v')
            .map_or((false, lowered.as_str()), |rest| (true, rest)),
    };
    let (hashed, digits) = rest.strip_prefix('#').map_or((false, rest), |d| (true, d));
    // A bare number is an order number as often as anything: it is searched as text only.
    let is_label =
        (named || hashed) && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
    is_label
        .then(|| digits.parse().ok())
        .flatten()
        .filter(|id| *id > 0)
}

impl SearchTerms {
    /// Splits `raw` on white space and keeps the first [`MAX_QUERY_WORDS`] words that hold a
    /// letter or digit; `None` when none is left. Each word becomes an FTS5 string (quotes
    /// doubled), so `"`, `*`, `NEAR`, `OR`, `-`, `^` and `column:` are only text; the words must
    /// all match (AND). A word with punctuation inside (`jane@example.com`) is a phrase: its
    /// pieces must follow each other.
    ///
    /// In messages a word matches whole words, with the index's stemming (`refunds` finds
    /// `refunded`): a prefix query would read every matching term's whole list. In visitors'
    /// names and emails (a small index) a word whose last run of letters and digits has two
    /// characters or more also matches longer words (`jan` finds `Janet`); a one-character
    /// tail does not.
    pub fn parse(raw: &str) -> Option<Self> {
        let cut: String = raw.chars().take(MAX_QUERY_CHARS).collect();
        let words: Vec<(String, bool)> = cut
            .split_whitespace()
            .filter(|w| w.chars().any(char::is_alphanumeric))
            .take(MAX_QUERY_WORDS)
            .map(|word| {
                (
                    format!("\"{}\"", word.replace('"', "\"\"")),
                    tail_len(word) >= 2,
                )
            })
            .collect();
        (!words.is_empty()).then(|| Self {
            messages: words
                .iter()
                .map(|(quoted, _)| quoted.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            visitors: words
                .iter()
                .map(|(quoted, prefix)| {
                    if *prefix {
                        format!("{quoted} *")
                    } else {
                        quoted.clone()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
            visitor_id: visitor_label(raw),
        })
    }

    /// The FTS5 MATCH expression for messages.
    pub fn messages_expr(&self) -> &str {
        &self.messages
    }

    /// The FTS5 MATCH expression for visitors' names and emails.
    pub fn visitors_expr(&self) -> &str {
        &self.visitors
    }
}

/// Characters in the last run of letters and digits of `word`: what FTS5 applies `*` to.
fn tail_len(word: &str) -> usize {
    word.chars()
        .rev()
        .skip_while(|c| !c.is_alphanumeric())
        .take_while(|c| c.is_alphanumeric())
        .count()
}

/// A piece of a snippet or highlight: text, and whether it matched the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    pub text: String,
    pub is_match: bool,
}

/// Splits text marked by the store into fragments. A stray marker (none should reach here)
/// only starts or ends a match; nothing here is markup, the page escapes every fragment.
pub fn fragments(marked: &str) -> Vec<Fragment> {
    let mut out: Vec<Fragment> = Vec::new();
    let mut text = String::new();
    let mut is_match = false;
    for c in marked.chars() {
        let switch_to = match c {
            MARK_START => true,
            MARK_END => false,
            _ => {
                text.push(c);
                continue;
            }
        };
        if switch_to != is_match {
            if !text.is_empty() {
                out.push(Fragment {
                    text: std::mem::take(&mut text),
                    is_match,
                });
            }
            is_match = switch_to;
        }
    }
    if !text.is_empty() {
        out.push(Fragment { text, is_match });
    }
    out
}

/// One page of search results.
#[derive(Debug, Clone)]
pub struct SearchResults {
    /// Conversations whose visitor matches (first page only).
    pub visitors: Vec<VisitorHitRow>,
    pub messages: Vec<MessageHitRow>,
    /// Matching messages, counted up to [`MESSAGE_WINDOW`].
    pub total: u32,
    /// Messages the indexer has not reached yet, counted up to [`UNINDEXED_CAP`]: they cannot
    /// be found until it has.
    pub unindexed: u32,
    /// The total reached the window: there may be more, older matches.
    pub is_capped: bool,
    /// Page number (from 1) and whether another follows.
    pub page: u32,
    pub has_next: bool,
}

/// Page `page` (from 1, clamped to the pages the window holds) of the results for `terms`
/// within `filter`, read on `c`: what the search page shows, and what `porch loadtest-search`
/// times.
pub fn read_search_page(
    c: &rusqlite::Connection,
    terms: &SearchTerms,
    filter: &SearchFilter,
    page: u32,
) -> Result<SearchResults, store::Error> {
    let page = page.clamp(1, MESSAGE_WINDOW / SEARCH_PAGE_SIZE);
    let offset = (page - 1) * SEARCH_PAGE_SIZE;
    let found = store::search_messages(c, terms.messages_expr(), filter, offset, SEARCH_PAGE_SIZE)?;
    let visitors = if page == 1 {
        // The visitor a label names first, then those whose name or email matches.
        let mut hits = match terms.visitor_id {
            Some(id) => store::find_visitor_hits(c, id, filter, VISITOR_HITS)?,
            None => Vec::new(),
        };
        for hit in store::search_visitors(c, terms.visitors_expr(), filter, VISITOR_HITS)? {
            if hits.len() < VISITOR_HITS as usize
                && !hits
                    .iter()
                    .any(|h| h.conversation_id == hit.conversation_id)
            {
                hits.push(hit);
            }
        }
        hits
    } else {
        Vec::new()
    };
    Ok(SearchResults {
        visitors,
        has_next: found.total > offset + SEARCH_PAGE_SIZE,
        is_capped: found.total >= MESSAGE_WINDOW,
        total: found.total,
        unindexed: store::count_unindexed(c, UNINDEXED_CAP)?,
        messages: found.hits,
        page,
    })
}

impl Chat {
    /// Page `page` (from 1) of the results for `terms` within `filter`.
    pub async fn search(
        &self,
        terms: SearchTerms,
        filter: SearchFilter,
        page: u32,
    ) -> Result<SearchResults, Error> {
        Ok(self
            .readers
            .read(move |c| read_search_page(c, &terms, &filter, page))
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(raw: &str) -> Option<String> {
        SearchTerms::parse(raw).map(|t| t.visitors)
    }

    #[test]
    fn words_become_quoted_strings_prefixes_only_for_visitors() {
        let terms = SearchTerms::parse("refund please a").expect("words");
        assert_eq!(terms.messages_expr(), "\"refund\" \"please\" \"a\"");
        assert_eq!(terms.visitors_expr(), "\"refund\" * \"please\" * \"a\"");
        assert_eq!(
            expr("jane@example.com").as_deref(),
            Some("\"jane@example.com\" *")
        );
    }

    #[test]
    fn the_inbox_label_of_a_visitor_names_them() {
        for (typed, id) in [
            ("Visitor #9", Some(9)),
            ("visitor 12", Some(12)),
            ("#9", Some(9)),
            ("v42", Some(42)),
            (" V42 ", Some(42)),
            ("9", None),
            ("visitor", None),
            ("vacation", None),
            ("#9a", None),
            ("Visitor #0", None),
        ] {
            assert_eq!(visitor_label(typed), id, "{typed}");
        }
    }

    #[test]
    fn syntax_is_only_text() {
        assert_eq!(expr("say\"hi").as_deref(), Some("\"say\"\"hi\" *"));
        assert_eq!(expr("NEAR(a b)").as_deref(), Some("\"NEAR(a\" \"b)\""));
        assert_eq!(expr("* - : \" ^ ()"), None);
        assert_eq!(expr("   "), None);
    }

    #[test]
    fn long_queries_are_cut() {
        let many = "word ".repeat(20);
        assert_eq!(
            expr(&many).map(|e| e.matches("word").count()),
            Some(MAX_QUERY_WORDS)
        );
        let long = "x".repeat(MAX_QUERY_CHARS * 2);
        assert_eq!(
            expr(&long).map(|e| e.len()),
            Some(MAX_QUERY_CHARS + "\"\" *".len())
        );
    }

    #[test]
    fn markers_split_fragments_and_strays_are_harmless() {
        let marked = format!("a {MARK_START}b{MARK_END} c");
        assert_eq!(
            fragments(&marked),
            vec![
                Fragment {
                    text: "a ".into(),
                    is_match: false
                },
                Fragment {
                    text: "b".into(),
                    is_match: true
                },
                Fragment {
                    text: " c".into(),
                    is_match: false
                },
            ]
        );
        let stray = format!("{MARK_END}x{MARK_START}{MARK_START}y");
        assert_eq!(
            fragments(&stray),
            vec![
                Fragment {
                    text: "x".into(),
                    is_match: false
                },
                Fragment {
                    text: "y".into(),
                    is_match: true
                },
            ]
        );
    }
}

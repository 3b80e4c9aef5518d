//! `GET /search`: the search page. Reads the query string leniently (an unknown site or status
//! means "any", a bad page number the first page), asks `chat` and renders the results.

use axum::extract::{Query, State};
use axum::response::Response;
use porch_app::inbox::Choice;
use porch_app::layout::Section;
use porch_app::search::{Marked, MessageHitView, SearchView, VisitorHitView, render_search};
use serde::Deserialize;

use crate::chat::{SearchResults, SearchTerms, UNINDEXED_CAP, fragments};
use crate::state::AppState;
use crate::store::{InboxStatus, MessageHitRow, SearchFilter, VisitorHitRow};
use crate::values::{Author, anonymous_visitor};

use super::page::{PageError, html};
use super::session::{SignedIn, url_encode};

/// The raw query string of `/search`.
#[derive(Debug, Default, Deserialize)]
pub struct SearchParams {
    #[serde(default)]
    q: String,
    /// A site's key.
    #[serde(default)]
    site: String,
    /// `open`, `closed`, or anything else for both.
    #[serde(default)]
    status: String,
    #[serde(default)]
    page: String,
}

fn choice(value: &str, label: &str, is_selected: bool) -> Choice {
    Choice {
        value: value.to_owned(),
        label: label.to_owned(),
        is_selected,
    }
}

fn marked(text: &str) -> Marked {
    fragments(text)
        .into_iter()
        .map(|f| (f.text, f.is_match))
        .collect()
}

fn visitor_hit(row: VisitorHitRow) -> VisitorHitView {
    let mut name = row.name.as_deref().map(marked).unwrap_or_default();
    if name.is_empty() && row.email.is_none() {
        name = vec![(anonymous_visitor(row.visitor_id), false)];
    }
    VisitorHitView {
        href: format!("/conversations/{}", row.conversation_id),
        name,
        email: row.email.as_deref().map(marked).unwrap_or_default(),
        site: row.site_name,
        is_open: row.status == "open",
        last_message_at: row.last_message_at,
    }
}

fn message_hit(row: MessageHitRow) -> MessageHitView {
    let agent = || {
        row.author_name
            .clone()
            .unwrap_or_else(|| "Agent".to_owned())
    };
    let author = match row.author {
        Author::Visitor => "Visitor".to_owned(),
        Author::Note => format!("{} · private note", agent()),
        _ => agent(),
    };
    let visitor = row
        .visitor_name
        .or(row.visitor_email)
        .unwrap_or_else(|| anonymous_visitor(row.visitor_id));
    MessageHitView {
        href: format!("/conversations/{}#m{}", row.conversation_id, row.message_id),
        visitor,
        author,
        site: row.site_name,
        is_open: row.status == "open",
        at: row.created_at,
        snippet: marked(&row.snippet),
    }
}

fn summary(results: &SearchResults) -> String {
    let visitors = match results.visitors.len() {
        0 => String::new(),
        1 => "1 conversation by its visitor, ".to_owned(),
        n => format!("{n} conversations by their visitor, "),
    };
    let messages = match results.total {
        0 => "no messages".to_owned(),
        1 => "1 message".to_owned(),
        n if results.is_capped => {
            format!("more than {n} messages (the newest {n} are shown)")
        }
        n => format!("{n} messages"),
    };
    let first = (results.page - 1) * crate::chat::SEARCH_PAGE_SIZE + 1;
    let shown = u32::try_from(results.messages.len()).unwrap_or(0);
    let range = if results.total == 0 {
        String::new()
    } else if shown == 0 {
        format!(
            ", none on this page (the last is page {})",
            last_page(results)
        )
    } else {
        format!(", showing {first}–{}", first + shown - 1)
    };
    let unindexed = match results.unindexed {
        0 => String::new(),
        1 => " 1 new message is not indexed yet.".to_owned(),
        n if n >= UNINDEXED_CAP => {
            format!(" More than {n} new messages are not indexed yet.")
        }
        n => format!(" {n} new messages are not indexed yet."),
    };
    format!("Found {visitors}{messages}{range}.{unindexed}")
}

/// The number of the last page with messages (1 when there are none).
fn last_page(results: &SearchResults) -> u32 {
    results.total.div_ceil(crate::chat::SEARCH_PAGE_SIZE).max(1)
}

/// `GET /search?q=…&site=…&status=…&page=…`.
pub async fn search_page(
    State(app): State<AppState>,
    who: SignedIn,
    Query(params): Query<SearchParams>,
) -> Result<Response, PageError> {
    let choices = app.chat.inbox_choices().await?;
    let site = choices.sites.iter().find(|s| s.key == params.site);
    let status = match params.status.as_str() {
        "open" => Some(InboxStatus::Open),
        "closed" => Some(InboxStatus::Closed),
        _ => None,
    };
    let status_value = status.map_or("", |s| match s {
        InboxStatus::Open => "open",
        InboxStatus::Closed => "closed",
    });
    let filter = SearchFilter {
        site: site.map(|s| s.id),
        status,
    };
    let mut site_choices = vec![choice("", "Every site", site.is_none())];
    site_choices.extend(
        choices
            .sites
            .iter()
            .map(|s| choice(&s.key, &s.settings.name, Some(s.id) == filter.site)),
    );
    let status_choices = vec![
        choice("", "Open and closed", status.is_none()),
        choice("open", "Open", status == Some(InboxStatus::Open)),
        choice("closed", "Closed", status == Some(InboxStatus::Closed)),
    ];
    let results = match SearchTerms::parse(&params.q) {
        Some(terms) => {
            let page = params.page.parse().unwrap_or(1);
            Some(app.chat.search(terms, filter, page).await?)
        }
        None => None,
    };
    let href = |page: u32| {
        format!(
            "/search?q={}&site={}&status={status_value}&page={page}",
            url_encode(&params.q),
            url_encode(site.map_or("", |s| s.key.as_str())),
        )
    };
    let view = SearchView {
        nav: who.nav(Section::Search),
        query: params.q.clone(),
        site: site_choices,
        status: status_choices,
        summary: match &results {
            Some(results) => summary(results),
            None if params.q.trim().is_empty() => {
                "Type words to look for in messages, visitor names and emails.".to_owned()
            }
            None => "Nothing to look for: type a word with letters or digits.".to_owned(),
        },
        // Past the last page (an old link, a typed number), back goes to the last one.
        previous: results
            .as_ref()
            .filter(|r| r.page > 1)
            .map(|r| href((r.page - 1).min(last_page(r)))),
        next: results
            .as_ref()
            .filter(|r| r.has_next)
            .map(|r| href(r.page + 1)),
        visitors: results
            .as_ref()
            .map(|r| r.visitors.iter().cloned().map(visitor_hit).collect())
            .unwrap_or_default(),
        messages: results
            .map(|r| r.messages.into_iter().map(message_hit).collect())
            .unwrap_or_default(),
    };
    Ok(html(render_search(view)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(total: u32, unindexed: u32) -> SearchResults {
        SearchResults {
            visitors: Vec::new(),
            messages: Vec::new(),
            total,
            unindexed,
            is_capped: false,
            page: 1,
            has_next: false,
        }
    }

    #[test]
    fn the_summary_says_how_many_messages_wait_for_the_indexer() {
        assert_eq!(summary(&results(0, 0)), "Found no messages.");
        assert_eq!(
            summary(&results(0, 1)),
            "Found no messages. 1 new message is not indexed yet."
        );
        assert_eq!(
            summary(&results(0, 42)),
            "Found no messages. 42 new messages are not indexed yet."
        );
        assert_eq!(
            summary(&results(0, UNINDEXED_CAP)),
            "Found no messages. More than 10000 new messages are not indexed yet."
        );
    }
}

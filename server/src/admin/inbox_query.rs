//! The inbox list's query string, shared by the page and its live stream: the tabs' `filter=`
//! shortcuts, `status`, `assignee`, `site`, `tag`, `sort` and the page cursor `cursor`, read leniently
//! (anything unknown means the default, never an error); and the links that carry it.

use porch_app::inbox::{Choice, Filter, InboxFilters};
use serde::Deserialize;

use crate::chat::{InboxChoices, Tag};
use crate::store::{
    ConversationId, INBOX_COUNT_CAP, InboxAssignee, InboxCursor, InboxItemRow, InboxQuery,
    InboxSort, InboxState, NO_SUCH_TAG, UserId,
};

use super::views::agent_label;

/// The raw query string of `/inbox` and `/inbox/events`.
#[derive(Debug, Default, Deserialize)]
pub struct InboxParams {
    /// A tab: `open`, `mine`, `unassigned` or `closed` (the URLs from before the filters).
    #[serde(default)]
    filter: String,
    #[serde(default)]
    status: String,
    /// `anyone`, `me`, `unassigned` or a user id.
    #[serde(default)]
    assignee: String,
    /// A site's key.
    #[serde(default)]
    site: String,
    /// A tag's name.
    #[serde(default)]
    tag: String,
    /// `recent` or `waiting`.
    #[serde(default)]
    sort: String,
    /// Where the page starts: `rank.at.id` of the previous page's last row.
    #[serde(default)]
    cursor: String,
}

/// The query string read against what exists: the store's query, and the values to link with.
#[derive(Debug, Clone)]
pub struct InboxRequest {
    pub query: InboxQuery,
    pub cursor: Option<InboxCursor>,
    /// The site's key, when one is chosen.
    pub site_key: Option<String>,
    /// The tag's name, when one is chosen.
    pub tag_name: Option<String>,
    me: UserId,
}

/// The list's filters as its live stream applies them, each change at a time: a tag by its
/// name, since the id the page read may not exist yet (a filter for a tag no conversation had
/// when the page loaded, which a colleague then adds) or may be gone (the tag left its last
/// conversation and was made again, under a new id).
#[derive(Debug, Clone)]
pub struct LiveFilter {
    /// The other filters and the order; its tag id is left out (the name below stands for it).
    pub query: InboxQuery,
    tag_name: Option<String>,
}

impl LiveFilter {
    /// Whether the conversation belongs in the list now.
    pub fn matches(&self, item: &InboxItemRow) -> bool {
        self.query.matches(item)
            && self
                .tag_name
                .as_deref()
                .is_none_or(|name| item.tags.iter().any(|tag| tag.name == name))
    }
}

impl From<InboxRequest> for LiveFilter {
    fn from(request: InboxRequest) -> Self {
        Self {
            query: InboxQuery {
                tag: None,
                ..request.query
            },
            tag_name: request.tag_name,
        }
    }
}

/// The status and assignee a tab stands for.
fn tab_query(tab: Filter, me: UserId) -> (InboxState, InboxAssignee) {
    match tab {
        Filter::Open => (InboxState::Open, InboxAssignee::Anyone),
        Filter::Mine => (InboxState::Open, InboxAssignee::User(me)),
        Filter::Unassigned => (InboxState::Open, InboxAssignee::Unassigned),
        Filter::Snoozed => (InboxState::Snoozed, InboxAssignee::Anyone),
        Filter::Closed => (InboxState::Closed, InboxAssignee::Anyone),
    }
}

/// `tag=…` with the name encoded for a query string.
pub fn tag_param(name: &str) -> String {
    form_urlencoded::Serializer::new(String::new())
        .append_pair("tag", name)
        .finish()
}

/// `rank.at.id`, as list items carry it and `cursor=` takes it.
pub fn format_cursor(cursor: InboxCursor) -> String {
    format!("{}.{}.{}", cursor.rank, cursor.at, cursor.id.0)
}

fn parse_cursor(raw: &str) -> Option<InboxCursor> {
    let mut parts = raw.split('.').map(|p| p.parse::<i64>().ok());
    let (Some(Some(rank)), Some(Some(at)), Some(Some(id)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some(InboxCursor {
        rank,
        at,
        id: ConversationId(id),
    })
}

impl InboxRequest {
    /// Reads `params` for `me`: a tab sets status and assignee, and `status` or `assignee`
    /// override it; a site or agent that does not exist (or is disabled), or a tag name that is
    /// not one, means "any".
    pub fn parse(params: &InboxParams, me: UserId, choices: &InboxChoices) -> Self {
        let tab = Filter::ALL.into_iter().find(|f| f.slug() == params.filter);
        let (mut status, mut assignee) = tab_query(tab.unwrap_or(Filter::Open), me);
        match params.status.as_str() {
            "open" => status = InboxState::Open,
            "snoozed" => status = InboxState::Snoozed,
            "closed" => status = InboxState::Closed,
            _ => {}
        }
        match params.assignee.as_str() {
            "anyone" => assignee = InboxAssignee::Anyone,
            "me" => assignee = InboxAssignee::User(me),
            "unassigned" => assignee = InboxAssignee::Unassigned,
            raw => {
                if let Some(agent) = raw
                    .parse::<i64>()
                    .ok()
                    .and_then(|id| choices.agents.iter().find(|a| a.id.0 == id))
                {
                    assignee = InboxAssignee::User(agent.id);
                }
            }
        }
        let site = choices.sites.iter().find(|s| s.key == params.site);
        // Read as tags are typed ("VIP  Plan" is "vip plan"); one no conversation has (its last
        // use was removed while the list was open) lists nothing, as the API's filter does.
        let tag_name = Tag::parse(&params.tag).ok();
        let tag = tag_name.as_ref().map(|name| {
            choices
                .tags
                .iter()
                .find(|t| t.name == name.as_str())
                .map_or(NO_SUCH_TAG, |t| t.id)
        });
        let sort = match params.sort.as_str() {
            "waiting" => InboxSort::Waiting,
            _ => InboxSort::Recent,
        };
        Self {
            query: InboxQuery {
                status,
                assignee,
                site: site.map(|s| s.id),
                tag,
                sort,
            },
            cursor: parse_cursor(&params.cursor),
            site_key: site.map(|s| s.key.clone()),
            tag_name: tag_name.map(|t| t.as_str().to_owned()),
            me,
        }
    }

    /// The tab these filters amount to, if any.
    pub fn tab(&self) -> Option<Filter> {
        let here = (self.query.status, self.query.assignee);
        Filter::ALL
            .into_iter()
            .find(|f| tab_query(*f, self.me) == here)
    }

    fn status_value(&self) -> &'static str {
        match self.query.status {
            InboxState::Open => "open",
            InboxState::Snoozed => "snoozed",
            InboxState::Closed => "closed",
        }
    }

    fn assignee_value(&self) -> String {
        match self.query.assignee {
            InboxAssignee::Anyone => "anyone".into(),
            InboxAssignee::Unassigned => "unassigned".into(),
            InboxAssignee::User(user) if user == self.me => "me".into(),
            InboxAssignee::User(user) => user.0.to_string(),
        }
    }

    /// `recent` or `waiting`.
    pub fn sort_value(&self) -> &'static str {
        match self.query.sort {
            InboxSort::Recent => "recent",
            InboxSort::Waiting => "waiting",
        }
    }

    /// The query string of these filters (without a cursor).
    fn filters(&self) -> String {
        let mut q = format!(
            "status={}&assignee={}",
            self.status_value(),
            self.assignee_value()
        );
        self.push_site_tag_and_sort(&mut q);
        q
    }

    fn push_site_tag_and_sort(&self, q: &mut String) {
        if let Some(key) = &self.site_key {
            // Site keys are `s_` and hex: nothing to encode.
            q.push_str("&site=");
            q.push_str(key);
        }
        if let Some(name) = &self.tag_name {
            q.push('&');
            q.push_str(&tag_param(name));
        }
        if self.query.sort == InboxSort::Waiting {
            q.push_str("&sort=waiting");
        }
    }

    /// The page of these filters starting after `cursor` (the first page when `None`).
    pub fn page_href(&self, cursor: Option<InboxCursor>) -> String {
        match cursor {
            Some(c) => format!("/inbox?{}&cursor={}", self.filters(), format_cursor(c)),
            None => format!("/inbox?{}", self.filters()),
        }
    }

    /// The count line of this page (`shown` rows then added by the script).
    pub fn summary_href(&self) -> String {
        match self.cursor {
            Some(c) => format!(
                "/inbox/summary?{}&cursor={}",
                self.filters(),
                format_cursor(c)
            ),
            None => format!("/inbox/summary?{}", self.filters()),
        }
    }

    /// The live stream of these filters.
    pub fn live_href(&self) -> String {
        format!("/inbox/events?{}", self.filters())
    }

    /// Each tab's link, keeping the site, tag and order.
    pub fn tab_hrefs(&self) -> Vec<(Filter, String)> {
        Filter::ALL
            .into_iter()
            .map(|f| {
                let mut q = format!("/inbox?filter={}", f.slug());
                self.push_site_tag_and_sort(&mut q);
                (f, q)
            })
            .collect()
    }

    /// The filter form's options, with the current ones selected.
    pub fn form(&self, choices: &InboxChoices) -> InboxFilters {
        let choice = |value: &str, label: &str, current: &str| Choice {
            value: value.to_owned(),
            label: label.to_owned(),
            is_selected: value == current,
        };
        let status = self.status_value();
        let assignee = self.assignee_value();
        let site = self.site_key.as_deref().unwrap_or("");
        let tag = self.tag_name.as_deref().unwrap_or("");
        let sort = self.sort_value();
        let mut assignees = vec![
            choice("anyone", "Anyone", &assignee),
            choice("me", "Me", &assignee),
            choice("unassigned", "Nobody (unassigned)", &assignee),
        ];
        assignees.extend(choices.agents.iter().filter(|a| a.id != self.me).map(|a| {
            let label = agent_label(a, &choices.agents);
            choice(&a.id.0.to_string(), &label, &assignee)
        }));
        let mut sites = vec![choice("", "All sites", site)];
        sites.extend(
            choices
                .sites
                .iter()
                .map(|s| choice(&s.key, &s.settings.name, site)),
        );
        let mut tags = vec![choice("", "Any tag", tag)];
        tags.extend(choices.tags.iter().map(|t| choice(&t.name, &t.name, tag)));
        if !tag.is_empty() && !choices.tags.iter().any(|t| t.name == tag) {
            tags.push(choice(tag, tag, tag));
        }
        InboxFilters {
            status: vec![
                choice("open", "Open", status),
                choice("snoozed", "Snoozed", status),
                choice("closed", "Closed", status),
            ],
            assignee: assignees,
            site: sites,
            tag: tags,
            sort: vec![
                choice("recent", "Newest activity first", sort),
                choice("waiting", "Longest waiting first", sort),
            ],
        }
    }

    /// "230 open conversations unassigned on Acme tagged refund, showing 1–200", in words.
    pub fn summary(&self, choices: &InboxChoices, total: u64, before: u64, shown: usize) -> String {
        let who = match self.query.assignee {
            InboxAssignee::Anyone => String::new(),
            InboxAssignee::Unassigned => " unassigned".into(),
            InboxAssignee::User(user) if user == self.me => " assigned to you".into(),
            InboxAssignee::User(user) => choices
                .agents
                .iter()
                .find(|a| a.id == user)
                .map(|a| format!(" assigned to {}", agent_label(a, &choices.agents)))
                .unwrap_or_default(),
        };
        let site = self
            .query
            .site
            .and_then(|id| choices.sites.iter().find(|s| s.id == id))
            .map(|s| format!(" on {}", s.settings.name))
            .unwrap_or_default();
        let tagged = self
            .tag_name
            .as_ref()
            .map(|tag| format!(" tagged {tag}"))
            .unwrap_or_default();
        let status = self.status_value();
        // Past the cap the store stops counting (`store::INBOX_COUNT_CAP`).
        let what = match total {
            1 => format!("1 {status} conversation{who}{site}{tagged}"),
            n if n > INBOX_COUNT_CAP => {
                format!("More than {INBOX_COUNT_CAP} {status} conversations{who}{site}{tagged}")
            }
            n => format!("{n} {status} conversations{who}{site}{tagged}"),
        };
        if shown == 0 {
            return if total == 0 {
                format!("{what}.")
            } else {
                format!("{what}; none after this point.")
            };
        }
        if before > INBOX_COUNT_CAP {
            return format!("{what}, showing {shown} after the first {INBOX_COUNT_CAP}");
        }
        let first = before + 1;
        let last = before + shown as u64;
        format!("{what}, showing {first}–{last}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{TagId, TagRow};

    fn nothing() -> InboxChoices {
        InboxChoices {
            sites: Vec::new(),
            agents: Vec::new(),
            tags: vec![TagRow {
                id: TagId(3),
                name: "vip plan".into(),
            }],
        }
    }

    fn parse(query: &str) -> InboxRequest {
        let params: InboxParams = serde_urlencoded::from_str(query).expect("query");
        InboxRequest::parse(&params, UserId(7), &nothing())
    }

    #[test]
    fn past_the_count_cap_the_summary_says_more_than() {
        let choices = nothing();
        let request = parse("");
        let capped = INBOX_COUNT_CAP + 1;
        assert_eq!(
            request.summary(&choices, capped, 0, 200),
            "More than 10000 open conversations, showing 1–200"
        );
        assert_eq!(
            request.summary(&choices, capped, 400, 200),
            "More than 10000 open conversations, showing 401–600"
        );
        assert_eq!(
            request.summary(&choices, capped, capped, 200),
            "More than 10000 open conversations, showing 200 after the first 10000"
        );
        assert_eq!(
            request.summary(&choices, 1, 0, 1),
            "1 open conversation, showing 1–1"
        );
    }

    #[test]
    fn the_old_tab_urls_mean_what_they_meant() {
        let mine = parse("filter=mine");
        assert_eq!(mine.query.status, InboxState::Open);
        assert_eq!(mine.query.assignee, InboxAssignee::User(UserId(7)));
        assert_eq!(mine.tab(), Some(Filter::Mine));
        assert_eq!(parse("filter=closed").tab(), Some(Filter::Closed));
        assert_eq!(parse("").query, InboxQuery::default());
    }

    #[test]
    fn unknown_values_fall_back_to_the_defaults() {
        let request =
            parse("filter=nope&status=x&assignee=42&site=s_none&tag=%3Cb%3E&sort=up&cursor=1.2");
        assert_eq!(request.query, InboxQuery::default());
        assert_eq!(request.cursor, None);
        assert_eq!(request.tab(), Some(Filter::Open));
    }

    #[test]
    fn explicit_filters_override_the_tab_and_combine() {
        let request = parse("filter=closed&status=open&assignee=unassigned&sort=waiting");
        assert_eq!(request.tab(), Some(Filter::Unassigned));
        assert_eq!(request.query.sort, InboxSort::Waiting);
        assert_eq!(
            request.page_href(Some(InboxCursor {
                rank: 1,
                at: 5,
                id: ConversationId(9)
            })),
            "/inbox?status=open&assignee=unassigned&sort=waiting&cursor=1.5.9"
        );
    }

    #[test]
    fn a_tag_filters_by_its_id_and_is_kept_by_every_link() {
        let request = parse("tag=VIP++Plan&filter=mine");
        assert_eq!(request.query.tag, Some(TagId(3)));
        assert_eq!(request.tab(), Some(Filter::Mine));
        assert_eq!(
            request.page_href(None),
            "/inbox?status=open&assignee=me&tag=vip+plan"
        );
        let tabs = request.tab_hrefs();
        assert!(
            tabs.iter().all(|(_, href)| href.ends_with("&tag=vip+plan")),
            "{tabs:?}"
        );
        assert_eq!(
            request.summary(&nothing(), 2, 0, 2),
            "2 open conversations assigned to you tagged vip plan, showing 1–2"
        );
        // A tag nobody has lists nothing, and the filter still shows it chosen.
        let gone = parse("tag=solo");
        assert_eq!(gone.query.tag, Some(NO_SUCH_TAG));
        let form = gone.form(&nothing());
        assert!(form.tag.iter().any(|c| c.value == "solo" && c.is_selected));
        assert_eq!(
            gone.summary(&nothing(), 0, 0, 0),
            "0 open conversations tagged solo."
        );
    }
}

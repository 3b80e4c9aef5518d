//! The counts' bookkeeping without a server: each event moves them as a recount would.

use std::sync::Arc;

use super::*;
use crate::store::SiteId;

fn tally(me: i64) -> Tally {
    Tally {
        me: UserId(me),
        viewing: None,
        open: FxHashMap::default(),
        counts: Counts::default(),
        scope: None,
        site_counts: Counts::default(),
        sent: None,
    }
}

fn visitor_message(id: i64, conversation: i64) -> MessageRow {
    MessageRow {
        id: MessageId(id),
        conversation_id: ConversationId(conversation),
        author: Author::Visitor,
        author_name: None,
        client_id: None,
        body: "hello".into(),
        created_at: 0,
        attachments: Vec::new(),
    }
}

/// The site a test conversation is of: conversations 0, 1, 2, 3 … are of sites 1, 2, 3, 1 ….
fn site_of(conversation: i64) -> SiteId {
    SiteId(conversation % 3 + 1)
}

fn assigned(t: &mut Tally, conversation: i64, assignee: Option<i64>) {
    t.change(ConversationId(conversation), |before| {
        Some(Open {
            assignee: assignee.map(UserId),
            ..before.unwrap_or(Open::new(site_of(conversation)))
        })
    });
}

#[test]
fn an_alert_keeps_the_first_characters_whole() {
    assert_eq!(first_chars("héllo", 2), "hé");
    assert_eq!(first_chars("hi", 140), "hi");
    assert_eq!(first_chars("", 3), "");
}

#[test]
fn an_alert_says_whether_the_message_opened_its_conversation() {
    let mut row = visitor_message(10, 5);
    row.body = "a\nb".repeat(100);
    let mut event = InboxEvent::new(SiteId(1), Arc::new(row));
    event.opened = true;
    let field = alert_field(&event);
    assert!(!field.trim_end().contains('\n'), "one data line: {field}");
    let json: serde_json::Value =
        serde_json::from_str(field.trim_start_matches("data: ").trim_end()).expect("JSON");
    assert_eq!(json["conversation"], 5);
    assert_eq!(json["message"], 10);
    assert_eq!(json["is_new"], true);
    assert_eq!(json["kind"], "message");
    assert_eq!(
        json["body"].as_str().map(|b| b.chars().count()),
        Some(ALERT_CHARS)
    );
}

fn item(status: &str, assignee: Option<i64>) -> InboxItemRow {
    InboxItemRow {
        id: ConversationId(5),
        site_id: SiteId(1),
        site_name: "Shop".into(),
        visitor_id: crate::store::VisitorId(9),
        visitor_name: Some("Dee".into()),
        visitor_email: None,
        status: status.into(),
        assignee_id: assignee.map(UserId),
        assignee_name: None,
        created_at: 0,
        last_message_at: 0,
        waiting_since: None,
        preview_author: None,
        preview_body: None,
        is_unread: false,
        snoozed_until: None,
        tags: Vec::new(),
        preview_files: 0,
    }
}

/// A status line in conversation 5 by user `by` (`None`: by Porch).
fn status_line(by: Option<i64>, body: &str) -> InboxEvent {
    let mut row = visitor_message(12, 5);
    (row.author, row.body) = (Author::System, body.into());
    let mut event = InboxEvent::new(SiteId(1), Arc::new(row));
    event.by = by.map(UserId);
    event
}

fn alert_kind(alert: Option<&str>) -> Option<String> {
    let json: serde_json::Value =
        serde_json::from_str(alert?.trim_start_matches("data: ").trim_end()).expect("JSON");
    Some(json["kind"].as_str().expect("kind").to_owned())
}

#[test]
fn a_colleague_giving_or_taking_a_conversation_alerts_but_ones_own_change_does_not() {
    let line = |by: i64, body: &str| status_line(Some(by), body);
    let kind = alert_kind;
    let me = UserId(1);
    let taken = line(2, "Cy took this conversation");
    let alert = status_alert(me, &taken, &item("open", Some(2)), Some(me));
    assert!(
        alert
            .as_deref()
            .unwrap_or("")
            .contains("Dee: Cy took this conversation")
    );
    assert_eq!(kind(alert.as_deref()).as_deref(), Some("unassigned"));
    let given = line(2, "Cy assigned this conversation to Ana");
    let alert = status_alert(me, &given, &item("open", Some(1)), Some(UserId(2)));
    assert_eq!(kind(alert.as_deref()).as_deref(), Some("assigned"));
    // One's own change, a change between others, and closing one's conversation: nothing.
    let mine = line(1, "Ana took this conversation");
    assert_eq!(status_alert(me, &mine, &item("open", Some(1)), None), None);
    assert_eq!(
        status_alert(me, &taken, &item("open", Some(2)), Some(UserId(3))),
        None
    );
    let closed = line(2, "Cy closed this conversation");
    assert_eq!(
        status_alert(me, &closed, &item("closed", Some(1)), Some(me)),
        None
    );
}

#[test]
fn a_snooze_running_out_alerts_the_agents_it_is_for() {
    let mut woke = status_line(None, "Snooze ended");
    woke.woke = true;
    let me = UserId(1);
    let alert = status_alert(me, &woke, &item("open", None), None);
    assert!(alert.as_deref().unwrap_or("").contains("Dee: Snooze ended"));
    assert_eq!(alert_kind(alert.as_deref()).as_deref(), Some("woke"));
    let mine = item("open", Some(1));
    assert_eq!(
        alert_kind(status_alert(me, &woke, &mine, Some(me)).as_deref()).as_deref(),
        Some("woke")
    );
    // A colleague's conversation, one snoozed again meanwhile, one closed: nothing.
    assert_eq!(
        status_alert(me, &woke, &item("open", Some(2)), Some(UserId(2))),
        None
    );
    let mut again = item("open", None);
    again.snoozed_until = Some(1);
    assert_eq!(status_alert(me, &woke, &again, None), None);
    assert_eq!(status_alert(me, &woke, &item("closed", None), None), None);
    // Any other status line without an author alerts nobody.
    assert_eq!(
        status_alert(me, &status_line(None, "x"), &item("open", None), None),
        None
    );
}

#[test]
fn a_new_conversation_counts_as_unassigned_and_alerts() {
    let mut t = tally(1);
    assert!(t.on_visitor_message(SiteId(1), &visitor_message(10, 5)));
    assert_eq!(
        t.counts,
        Counts {
            open: 1,
            mine: 0,
            unassigned: 1,
            needs: 1
        }
    );
}

#[test]
fn someone_elses_conversation_counts_as_open_only_and_does_not_alert() {
    let mut t = tally(1);
    assigned(&mut t, 5, Some(2));
    assert!(!t.on_visitor_message(SiteId(1), &visitor_message(10, 5)));
    assert_eq!(t.counts.open, 1);
    assert_eq!(t.counts.needs, 0);
    assigned(&mut t, 5, Some(1));
    assert!(t.on_visitor_message(SiteId(1), &visitor_message(11, 5)));
    assert_eq!((t.counts.mine, t.counts.needs), (1, 1));
}

#[test]
fn an_erased_visitors_conversations_count_no_more() {
    let mut t = tally(1);
    t.on_visitor_message(SiteId(1), &visitor_message(10, 5));
    t.on_visitor_message(SiteId(1), &visitor_message(11, 6));
    assert_eq!((t.counts.open, t.counts.needs), (2, 2));
    t.on_erased(&Erasure {
        visitor: crate::store::VisitorId(3),
        conversations: vec![ConversationId(5)],
        by_the_visitor: false,
    });
    assert_eq!((t.counts.open, t.counts.needs), (1, 1));
}

#[test]
fn a_read_mark_clears_only_what_it_covers_and_only_for_its_agent() {
    let mut t = tally(1);
    t.on_visitor_message(SiteId(1), &visitor_message(10, 5));
    let mark = |user, up_to| ReadMark {
        user: UserId(user),
        conversation: ConversationId(5),
        up_to: MessageId(up_to),
        is_unread: false,
    };
    t.on_read(mark(2, 10));
    t.on_read(mark(1, 9));
    assert_eq!(t.counts.needs, 1);
    t.on_read(mark(1, 10));
    assert_eq!(t.counts.needs, 0);
    // Marked unread by another agent: nothing here; by this one: it counts again, until read.
    let unread = |user| ReadMark {
        is_unread: true,
        ..mark(user, 10)
    };
    t.on_read(unread(2));
    assert_eq!(t.counts.needs, 0);
    t.on_read(unread(1));
    assert_eq!(t.counts.needs, 1);
    t.on_read(mark(1, 10));
    assert_eq!(t.counts.needs, 0);
    // A mark of unread published after a newer visitor message was counted keeps that one: a
    // read of the older message alone leaves the conversation unread.
    t.on_visitor_message(SiteId(1), &visitor_message(12, 5));
    t.on_read(unread(1));
    t.on_read(mark(1, 10));
    assert_eq!(t.counts.needs, 1);
    t.on_read(mark(1, 12));
    assert_eq!(t.counts.needs, 0);
    // Read, the conversation is still open: someone else's next message does not alert.
    assigned(&mut t, 5, Some(2));
    assert!(!t.on_visitor_message(SiteId(1), &visitor_message(11, 5)));
}

#[test]
fn the_conversation_on_screen_never_counts_but_still_alerts() {
    let mut t = tally(1);
    t.viewing = Some(ConversationId(5));
    assert!(t.on_visitor_message(SiteId(1), &visitor_message(10, 5)));
    assert_eq!(t.counts.needs, 0);
}

#[test]
fn the_counts_say_what_the_conversation_on_screen_adds_while_the_page_has_not_shown_it() {
    let mut t = tally(1);
    t.viewing = Some(ConversationId(5));
    let here = |t: &mut Tally| {
        t.send_counts(&mut Batch::default());
        t.sent.and_then(|sent| sent.here)
    };
    // Not open yet: it adds nothing.
    assert_eq!(here(&mut t), Some(Counts::default()));
    t.on_visitor_message(SiteId(1), &visitor_message(10, 5));
    let unassigned = Counts {
        open: 1,
        unassigned: 1,
        needs: 1,
        mine: 0,
    };
    assert_eq!(here(&mut t), Some(unassigned));
    // A colleague's: open only; the other pages' counts carry no `here`.
    assigned(&mut t, 5, Some(2));
    let theirs = Counts {
        open: 1,
        ..Counts::default()
    };
    assert_eq!(here(&mut t), Some(theirs));
    // Read (here, or in another tab or device): it adds nothing any more.
    t.on_read(ReadMark {
        user: UserId(1),
        conversation: ConversationId(5),
        up_to: MessageId(10),
        is_unread: false,
    });
    assert_eq!(here(&mut t), Some(Counts::default()));
    assert_eq!(
        t.counts,
        Counts::default(),
        "never in the counts themselves"
    );
    t.viewing = None;
    assert_eq!(here(&mut t), None);
}

#[test]
fn kept_counts_equal_a_recount_after_any_change() {
    let mut t = tally(1);
    // An inbox filtered to site 2 ([`site_of`]); and a conversation on screen, kept but never
    // counted (the same tally serves both pages).
    t.scope = Some(SiteId(2));
    t.viewing = Some(ConversationId(6));
    let mark = |conversation, up_to| ReadMark {
        user: UserId(1),
        conversation: ConversationId(conversation),
        up_to: MessageId(up_to),
        is_unread: false,
    };
    for step in 0..200_i64 {
        let conversation = step % 7;
        match step % 5 {
            0 | 1 => {
                t.on_visitor_message(site_of(conversation), &visitor_message(step, conversation));
            }
            2 => t.on_read(mark(conversation, step)),
            // Assigned to me, to someone else, or closed, as a status line would leave it.
            3 => {
                let assignee = match step % 3 {
                    0 => None,
                    1 => Some(1),
                    _ => Some(2),
                };
                assigned(&mut t, conversation, assignee);
            }
            _ => t.change(ConversationId(conversation), |_| None),
        }
        let kept = (t.counts, t.site_counts);
        t.recount();
        assert_eq!(kept, (t.counts, t.site_counts), "after step {step}");
    }
    assert!(t.counts.open > 0, "the sequence leaves something unread");
    assert!(
        t.site_counts.open > 0 && t.site_counts.open < t.counts.open,
        "the site's counts are a part: {:?} of {:?}",
        t.site_counts,
        t.counts
    );
}

//! Conversations' tags (docs/admin.md, "Tags"; `migrations/0038_tags.sql`): which a
//! conversation has, adding and removing them, and the list of every tag in use. A tag exists
//! while a conversation has it: the write that removes its last use deletes it too.

use rusqlite::{Connection, OptionalExtension as _, params};

use crate::values::Tag;

use super::{ConversationId, Error, TagId};

/// Most tags one conversation has.
pub const MAX_TAGS_PER_CONVERSATION: usize = 20;

/// A tag in use: its id (what the inbox filters by) and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRow {
    pub id: TagId,
    pub name: String,
}

/// Every tag some conversation has, by name.
pub fn list_tags(conn: &Connection) -> Result<Vec<TagRow>, Error> {
    let mut stmt = conn.prepare_cached("SELECT id, name FROM tags ORDER BY name")?;
    Ok(stmt
        .query_map([], |r| {
            Ok(TagRow {
                id: r.get(0)?,
                name: r.get(1)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// The tag named `name`, if some conversation has it.
pub fn find_tag(conn: &Connection, name: &str) -> Result<Option<TagId>, Error> {
    Ok(conn
        .prepare_cached("SELECT id FROM tags WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?)
}

/// Conversation `id`'s tags, by name.
pub fn list_conversation_tags(conn: &Connection, id: ConversationId) -> Result<Vec<String>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.name FROM conversation_tags ct JOIN tags t ON t.id = ct.tag_id \
         WHERE ct.conversation_id = ?1 ORDER BY t.name",
    )?;
    Ok(stmt
        .query_map([id], |r| r.get(0))?
        .collect::<Result<_, _>>()?)
}

/// Gives conversation `id` the tags of `add` it lacks (while it has fewer than
/// [`MAX_TAGS_PER_CONVERSATION`]) and takes away those of `remove` it has; returns the names
/// actually added and removed, each in the order given.
pub fn change_conversation_tags(
    conn: &Connection,
    id: ConversationId,
    add: &[Tag],
    remove: &[Tag],
) -> Result<(Vec<String>, Vec<String>), Error> {
    let mut removed = Vec::new();
    for tag in remove {
        let Some(tag_id) = find_tag(conn, tag.as_str())? else {
            continue;
        };
        let gone = conn
            .prepare_cached(
                "DELETE FROM conversation_tags WHERE conversation_id = ?1 AND tag_id = ?2",
            )?
            .execute(params![id, tag_id])?;
        if gone == 1 {
            removed.push(tag.as_str().to_owned());
            delete_tag_if_unused(conn, tag_id)?;
        }
    }
    let mut added = Vec::new();
    for tag in add {
        if list_conversation_tags(conn, id)?.len() >= MAX_TAGS_PER_CONVERSATION {
            break;
        }
        conn.prepare_cached("INSERT INTO tags (name) VALUES (?1) ON CONFLICT (name) DO NOTHING")?
            .execute([tag.as_str()])?;
        let fresh = conn
            .prepare_cached(
                "INSERT INTO conversation_tags (conversation_id, tag_id) \
                 SELECT ?1, id FROM tags WHERE name = ?2 ON CONFLICT DO NOTHING",
            )?
            .execute(params![id, tag.as_str()])?;
        if fresh == 1 {
            added.push(tag.as_str().to_owned());
        }
    }
    Ok((added, removed))
}

fn delete_tag_if_unused(conn: &Connection, tag_id: TagId) -> Result<(), Error> {
    conn.prepare_cached(
        "DELETE FROM tags WHERE id = ?1 \
           AND NOT EXISTS (SELECT 1 FROM conversation_tags WHERE tag_id = ?1)",
    )?
    .execute([tag_id])?;
    Ok(())
}

/// Deletes the tags no conversation has any more, after conversations were deleted (purged,
/// erased, or with their site): a tag such as a visitor's name must not outlive them. The tags
/// table is small (the names a team uses), each check one index probe.
pub fn delete_unused_tags(conn: &Connection) -> Result<(), Error> {
    conn.prepare_cached(
        "DELETE FROM tags WHERE NOT EXISTS (SELECT 1 FROM conversation_tags WHERE tag_id = tags.id)",
    )?
    .execute([])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::migrate::migrated_in_memory;

    /// One site, one visitor, conversations 1 and 2.
    fn conversations() -> Connection {
        let conn = migrated_in_memory();
        conn.execute_batch(
            "INSERT INTO sites (key, name, created_at) VALUES ('s_x', 'X', 0); \
             INSERT INTO visitors (site_id, token_hash, first_seen_at, last_seen_at) \
                 VALUES (1, randomblob(32), 0, 0); \
             INSERT INTO conversations (site_id, visitor_id, status, created_at, last_message_at) \
                 VALUES (1, 1, 'open', 0, 100), (1, 1, 'closed', 0, 50);",
        )
        .expect("seed");
        conn
    }

    fn tags(names: &[&str]) -> Vec<Tag> {
        names.iter().map(|n| Tag::parse(n).expect("tag")).collect()
    }

    fn names(conn: &Connection) -> Vec<String> {
        list_tags(conn)
            .expect("tags")
            .into_iter()
            .map(|t| t.name)
            .collect()
    }

    #[test]
    fn a_tag_exists_while_a_conversation_has_it() {
        let conn = conversations();
        let (one, two) = (ConversationId(1), ConversationId(2));
        let change = change_conversation_tags(&conn, one, &tags(&["vip", "refund"]), &[]);
        assert_eq!(
            change.expect("add"),
            (vec!["vip".into(), "refund".into()], vec![])
        );
        // Added again: nothing changes.
        let again = change_conversation_tags(&conn, one, &tags(&["vip"]), &[]).expect("again");
        assert_eq!(again, (vec![], vec![]));
        change_conversation_tags(&conn, two, &tags(&["vip"]), &[]).expect("two");
        assert_eq!(names(&conn), ["refund", "vip"]);
        assert_eq!(
            list_conversation_tags(&conn, one).expect("one"),
            ["refund", "vip"]
        );
        // Removing a tag one never had changes nothing; removing the last use deletes the tag.
        let removed =
            change_conversation_tags(&conn, two, &[], &tags(&["refund", "vip"])).expect("remove");
        assert_eq!(removed, (vec![], vec!["vip".into()]));
        let removed =
            change_conversation_tags(&conn, one, &[], &tags(&["refund"])).expect("remove");
        assert_eq!(removed, (vec![], vec!["refund".into()]));
        assert_eq!(names(&conn), ["vip"]);
    }

    #[test]
    fn a_conversation_has_at_most_twenty_tags() {
        let conn = conversations();
        let many: Vec<String> = (0..25).map(|i| format!("t{i:02}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let (added, _) =
            change_conversation_tags(&conn, ConversationId(1), &tags(&many), &[]).expect("add");
        assert_eq!(added.len(), MAX_TAGS_PER_CONVERSATION);
        assert_eq!(added.last().map(String::as_str), Some("t19"));
    }

    #[test]
    fn deleting_a_conversation_deletes_the_tags_only_it_had() {
        let conn = migrated_with_foreign_keys(conversations());
        change_conversation_tags(&conn, ConversationId(1), &tags(&["jane doe", "vip"]), &[])
            .expect("one");
        change_conversation_tags(&conn, ConversationId(2), &tags(&["vip"]), &[]).expect("two");
        conn.execute("DELETE FROM conversations WHERE id = 1", [])
            .expect("delete");
        delete_unused_tags(&conn).expect("forget");
        assert_eq!(names(&conn), ["vip"]);
        assert_eq!(
            list_conversation_tags(&conn, ConversationId(2)).expect("two"),
            ["vip"]
        );
        let uses: i64 = conn
            .query_row("SELECT count(*) FROM conversation_tags", [], |r| r.get(0))
            .expect("count");
        assert_eq!(uses, 1);
    }

    fn migrated_with_foreign_keys(conn: Connection) -> Connection {
        conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
        conn
    }
}

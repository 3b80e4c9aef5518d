//! Conversations' tags (docs/admin.md, "Tags"; `migrations/0038_tags.sql`): which a
//! conversation has, adding and removing them, and the list of every tag in use. A tag exists
//! while a conversation has it: the write that removes its last use deletes it too.

use std::collections::HashSet;

use rusqlite::{Connection, OptionalExtension as _, params};

use crate::values::{MAX_TAGS, Tag};

use super::{ConversationId, Error, TagId};

/// The id no tag has (ids start at 1 and are never reused): a filter by a tag no conversation
/// has lists nothing.
pub const NO_SUCH_TAG: TagId = TagId(0);

/// A tag in use: its id (what the inbox filters by) and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRow {
    pub id: TagId,
    pub name: String,
}

/// The tags of the conversation `c` of a query, by name, as JSON `[[id, name], …]`: a column of
/// the inbox's and the API's conversation rows, read with [`tags_from_json`]. A macro, so that
/// their queries `concat!` it into constants.
macro_rules! tags_of_c {
    () => {
        "(SELECT json_group_array(json_array(t.id, t.name) ORDER BY t.name) \
         FROM conversation_tags ct JOIN tags t ON t.id = ct.tag_id WHERE ct.conversation_id = c.id)"
    };
}
pub(super) use tags_of_c;

/// The tags of [`tags_of_c`] in column `column` of `row`.
pub(super) fn tags_from_json(
    row: &rusqlite::Row<'_>,
    column: usize,
) -> rusqlite::Result<Vec<TagRow>> {
    let json: String = row.get(column)?;
    let pairs: Vec<(TagId, String)> = serde_json::from_str(&json).map_err(|err| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, err.into())
    })?;
    Ok(pairs
        .into_iter()
        .map(|(id, name)| TagRow { id, name })
        .collect())
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

/// Conversation `id`'s tags, by name: for its export, for a change of them, and read before it
/// is deleted (purged, erased) so that [`delete_tags_if_unused`] can then delete those no other
/// conversation has.
pub fn list_conversation_tags(conn: &Connection, id: ConversationId) -> Result<Vec<TagRow>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT t.id, t.name FROM conversation_tags ct JOIN tags t ON t.id = ct.tag_id \
         WHERE ct.conversation_id = ?1 ORDER BY t.name",
    )?;
    Ok(stmt
        .query_map([id], |r| {
            Ok(TagRow {
                id: r.get(0)?,
                name: r.get(1)?,
            })
        })?
        .collect::<Result<_, _>>()?)
}

/// What a change of a conversation's tags did: the names added and removed, each in the order
/// given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagsChanged {
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

/// Gives conversation `id` the tags of `add` it lacks and takes away those of `remove` it has (a
/// tag in both is removed), deciding on the tags it has in this transaction, so that two agents
/// changing them at once are each told what they did. `None`, and nothing written, when it would
/// have more than [`MAX_TAGS`].
pub fn change_conversation_tags(
    conn: &Connection,
    id: ConversationId,
    add: &[Tag],
    remove: &[Tag],
) -> Result<Option<TagsChanged>, Error> {
    let has = list_conversation_tags(conn, id)?;
    let had = |tag: &Tag| {
        has.iter()
            .find(|row| row.name == tag.as_str())
            .map(|row| row.id)
    };
    // Each name once, in the order given, whatever the caller gave.
    let mut seen = HashSet::new();
    let add: Vec<&Tag> = add
        .iter()
        .filter(|tag| had(tag).is_none() && !remove.contains(tag) && seen.insert(*tag))
        .collect();
    let remove: Vec<(&Tag, TagId)> = remove
        .iter()
        .filter_map(|tag| Some((tag, had(tag)?)))
        .filter(|(tag, _)| seen.insert(*tag))
        .collect();
    if has.len() + add.len() > MAX_TAGS + remove.len() {
        return Ok(None);
    }
    for (_, tag_id) in &remove {
        conn.prepare_cached(
            "DELETE FROM conversation_tags WHERE conversation_id = ?1 AND tag_id = ?2",
        )?
        .execute(params![id, tag_id])?;
        delete_tag_if_unused(conn, *tag_id)?;
    }
    for tag in &add {
        // Not `ON CONFLICT DO NOTHING`: that would use up an AUTOINCREMENT id for a name that
        // exists already.
        conn.prepare_cached(
            "INSERT INTO tags (name) SELECT ?1 WHERE NOT EXISTS (SELECT 1 FROM tags WHERE name = ?1)",
        )?
        .execute([tag.as_str()])?;
        conn.prepare_cached(
            "INSERT INTO conversation_tags (conversation_id, tag_id) \
             SELECT ?1, id FROM tags WHERE name = ?2 ON CONFLICT DO NOTHING",
        )?
        .execute(params![id, tag.as_str()])?;
    }
    Ok(Some(TagsChanged {
        added: add.iter().map(|t| t.as_str().to_owned()).collect(),
        removed: remove.iter().map(|(t, _)| t.as_str().to_owned()).collect(),
    }))
}

fn delete_tag_if_unused(conn: &Connection, tag_id: TagId) -> Result<(), Error> {
    conn.prepare_cached(
        "DELETE FROM tags WHERE id = ?1 \
           AND NOT EXISTS (SELECT 1 FROM conversation_tags WHERE tag_id = ?1)",
    )?
    .execute([tag_id])?;
    Ok(())
}

/// Deletes those of `tags` no conversation has any more: a tag such as a visitor's name must
/// not outlive the conversations it was given to.
pub fn delete_tags_if_unused(conn: &Connection, tags: &[TagId]) -> Result<(), Error> {
    for tag in tags {
        delete_tag_if_unused(conn, *tag)?;
    }
    Ok(())
}

/// Deletes every tag no conversation has any more, after many conversations went at once (a
/// site deleted with its conversations).
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
    use crate::store::migrate::migrated_with_conversations;

    /// One site, one visitor, conversations 1 (open) and 2 (closed).
    fn conversations() -> Connection {
        migrated_with_conversations(&[("open", 100), ("closed", 50)])
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

    /// Conversation `id`'s tag names.
    fn names_of(conn: &Connection, id: i64) -> Vec<String> {
        list_conversation_tags(conn, ConversationId(id))
            .expect("tags")
            .into_iter()
            .map(|t| t.name)
            .collect()
    }

    /// The change's added and removed names.
    fn change(
        conn: &Connection,
        id: i64,
        add: &[&str],
        remove: &[&str],
    ) -> (Vec<String>, Vec<String>) {
        let changed = change_conversation_tags(conn, ConversationId(id), &tags(add), &tags(remove))
            .expect("change")
            .expect("within the limit");
        (changed.added, changed.removed)
    }

    #[test]
    fn a_tag_exists_while_a_conversation_has_it() {
        let conn = conversations();
        assert_eq!(
            change(&conn, 1, &["vip", "refund"], &[]),
            (vec!["vip".into(), "refund".into()], vec![])
        );
        // Added again: nothing changes. Added and removed at once: removed. Twice: once.
        assert_eq!(change(&conn, 1, &["vip"], &[]), (vec![], vec![]));
        assert_eq!(
            change(&conn, 2, &["vip", "b2b", "vip"], &["b2b"]),
            (vec!["vip".into()], vec![])
        );
        assert_eq!(names(&conn), ["refund", "vip"]);
        assert_eq!(names_of(&conn, 1), ["refund", "vip"]);
        // Giving a name that exists already used up no id: the next new tag is 3.
        change(&conn, 2, &["c"], &[]);
        assert_eq!(find_tag(&conn, "c").expect("read"), Some(TagId(3)));
        change(&conn, 2, &[], &["c"]);
        // Removing a tag one never had changes nothing; removing the last use deletes the tag.
        assert_eq!(
            change(&conn, 2, &[], &["refund", "vip"]),
            (vec![], vec!["vip".into()])
        );
        assert_eq!(
            change(&conn, 1, &[], &["refund"]),
            (vec![], vec!["refund".into()])
        );
        assert_eq!(names(&conn), ["vip"]);
    }

    #[test]
    fn a_change_past_twenty_tags_changes_nothing() {
        let conn = conversations();
        let many: Vec<String> = (0..MAX_TAGS).map(|i| format!("t{i:02}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(change(&conn, 1, &many, &[]).0.len(), MAX_TAGS);
        let one_more = change_conversation_tags(&conn, ConversationId(1), &tags(&["t99"]), &[]);
        assert_eq!(one_more.expect("read"), None);
        // One out, one in: still twenty.
        assert_eq!(
            change(&conn, 1, &["t99"], &["t00"]),
            (vec!["t99".into()], vec!["t00".into()])
        );
        assert_eq!(names_of(&conn, 1).len(), MAX_TAGS);
    }

    #[test]
    fn deleting_a_conversation_deletes_the_tags_only_it_had() {
        let conn = migrated_with_foreign_keys(conversations());
        change(&conn, 1, &["jane doe", "vip"], &[]);
        change(&conn, 2, &["vip"], &[]);
        let had: Vec<TagId> = list_conversation_tags(&conn, ConversationId(1))
            .expect("tags")
            .into_iter()
            .map(|t| t.id)
            .collect();
        conn.execute("DELETE FROM conversations WHERE id = 1", [])
            .expect("delete");
        delete_tags_if_unused(&conn, &had).expect("forget");
        assert_eq!(names(&conn), ["vip"]);
        assert_eq!(names_of(&conn, 2), ["vip"]);
        // A new tag never takes a deleted one's id.
        let jane: TagId = had.into_iter().max().expect("an id");
        change(&conn, 2, &["new"], &[]);
        assert!(find_tag(&conn, "new").expect("read").expect("new") > jane);
        conn.execute("DELETE FROM conversations", []).expect("all");
        delete_unused_tags(&conn).expect("forget all");
        assert!(names(&conn).is_empty());
    }

    fn migrated_with_foreign_keys(conn: Connection) -> Connection {
        conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
        conn
    }
}

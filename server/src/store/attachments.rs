//! The `attachments`, `attachment_chunks` and `attachment_thumbnails` tables
//! (`migrations/0019_attachments.sql`, `0020_attachment_thumbnails.sql`): uploads written chunk
//! by chunk, taken by one message, read back (whole or as a thumbnail) for the people allowed
//! to see them, and swept when no message took them.

use std::collections::{HashMap, HashSet};

use rusqlite::{Connection, OptionalExtension, named_params, params};

use super::{
    ConversationId, Error, MessageId, MessageRow, NewVisitorMessage, SiteId, UserId, VisitorId,
};

/// What a message frame, the inbox and an export show of an attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentMeta {
    /// The id clients name (`att_` and 26 random base32 characters).
    pub id: String,
    pub name: String,
    pub content_type: String,
    pub size: i64,
}

/// Who uploaded a file: only they can attach it to a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uploader {
    /// A visitor, by the SHA-256 of their token (they may not have a visitor row yet).
    Visitor([u8; 32]),
    Agent(UserId),
    /// An integration, for a person without an account (a Slack user's file in a thread):
    /// stored with neither a token hash nor a user, so no visitor or agent can attach it.
    Integration,
}

/// An upload's row, before its bytes are written.
#[derive(Debug, Clone)]
pub struct NewAttachment {
    pub site_id: SiteId,
    pub uploader: Uploader,
    pub meta: AttachmentMeta,
    pub now: i64,
}

/// A stored attachment with what deciding who may read it needs.
#[derive(Debug, Clone)]
pub struct StoredAttachment {
    /// The row id, which names the chunks.
    pub row: i64,
    pub meta: AttachmentMeta,
    pub site_id: SiteId,
    /// The uploading visitor's token hash (`None` for an agent's upload).
    pub uploader_token_hash: Option<Vec<u8>>,
    /// The token hash of the visitor whose conversation holds it, once a message took it.
    pub conversation_token_hash: Option<Vec<u8>>,
    /// The message that took it is a private note (never shown to the visitor).
    pub is_on_note: bool,
    /// The conversation of the message that took it.
    pub conversation_id: Option<ConversationId>,
    /// The uploading agent.
    pub user_id: Option<UserId>,
}

/// Starts an upload: its row, not yet complete. Returns the row id the chunks name.
pub fn insert_attachment(conn: &Connection, new: &NewAttachment) -> Result<i64, Error> {
    let (token_hash, user_id) = uploader_columns(new.uploader);
    conn.prepare_cached(
        "INSERT INTO attachments (public_id, site_id, token_hash, user_id, name, content_type, \
         size, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        new.meta.id,
        new.site_id,
        token_hash,
        user_id,
        new.meta.name,
        new.meta.content_type,
        new.meta.size,
        new.now
    ])?;
    Ok(conn.last_insert_rowid())
}

/// Writes chunk `seq` of an upload; the last one marks the upload complete.
pub fn insert_attachment_chunk(
    conn: &Connection,
    row: i64,
    seq: u32,
    data: &[u8],
    is_last: bool,
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO attachment_chunks (attachment_id, seq, data) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![row, seq, data])?;
    if is_last {
        conn.prepare_cached("UPDATE attachments SET is_complete = 1 WHERE id = ?1")?
            .execute([row])?;
    }
    Ok(())
}

/// Gives the uploads `ids` to a message, in that order, and returns what they show.
///
/// # Errors
/// [`Error::UnknownAttachment`] when an id is not a complete upload of this uploader on this
/// site that no message has taken yet (the caller's savepoint then undoes the message too).
pub fn attach_to_message(
    conn: &Connection,
    site: SiteId,
    uploader: Uploader,
    message: MessageId,
    conversation: ConversationId,
    ids: &[String],
) -> Result<Vec<AttachmentMeta>, Error> {
    let (token_hash, user_id) = uploader_columns(uploader);
    let mut take = conn.prepare_cached(&format!(
        "UPDATE attachments SET message_id = :message, conversation_id = :conversation \
         WHERE {FREE_UPLOAD} RETURNING public_id, name, content_type, size"
    ))?;
    let mut metas = Vec::with_capacity(ids.len());
    for id in ids {
        let meta = take
            .query_row(
                named_params! {
                    ":message": message, ":conversation": conversation, ":id": id,
                    ":site": site, ":token_hash": token_hash, ":user_id": user_id,
                },
                meta_from_row,
            )
            .optional()?
            .ok_or(Error::UnknownAttachment)?;
        metas.push(meta);
    }
    Ok(metas)
}

/// An upload `:id` of `:site` that is complete, that no message has taken, and whose uploader
/// is `:token_hash` or `:user_id` (both NULL: an integration's).
const FREE_UPLOAD: &str = "public_id = :id AND site_id = :site AND message_id IS NULL \
     AND is_complete = 1 AND (token_hash = :token_hash OR user_id = :user_id \
       OR (:token_hash IS NULL AND :user_id IS NULL AND token_hash IS NULL AND user_id IS NULL))";

/// Whether a visitor message can take its attachments: it is a resend of a message already
/// stored under its `client_id` (which the write answers as a duplicate), or every id, each
/// named once, is a free upload of this browser (`upload_hash`) on the message's site (see
/// [`attach_to_message`]). Checked in the message's write before it writes anything, so a
/// message naming someone else's upload, or a made-up one, fails with nothing to undo and costs
/// its writer batch no second pass.
pub(super) fn can_take_visitor_uploads(
    conn: &Connection,
    message: &NewVisitorMessage,
) -> Result<bool, Error> {
    let is_resend = conn
        .prepare_cached(
            "SELECT 1 FROM messages m JOIN visitors v ON v.id = m.visitor_id \
              WHERE v.token_hash = ?1 AND m.client_id = ?2",
        )?
        .query_row(
            params![message.token_hash.as_slice(), message.client_id],
            |_| Ok(()),
        )
        .optional()?
        .is_some();
    if is_resend {
        return Ok(true);
    }
    let browser = Uploader::Visitor(message.upload_hash);
    are_free_uploads(conn, message.site_id, browser, &message.attachments)
}

/// Whether every id in `ids`, each named once, is a free upload of `uploader` on `site`: one
/// [`attach_to_message`] would take.
pub fn are_free_uploads(
    conn: &Connection,
    site: SiteId,
    uploader: Uploader,
    ids: &[String],
) -> Result<bool, Error> {
    let (token_hash, user_id) = uploader_columns(uploader);
    let mut free =
        conn.prepare_cached(&format!("SELECT 1 FROM attachments WHERE {FREE_UPLOAD}"))?;
    let mut seen = HashSet::new();
    for id in ids {
        let params = named_params! {
            ":id": id, ":site": site, ":token_hash": token_hash, ":user_id": user_id,
        };
        if !seen.insert(id) || free.query_row(params, |_| Ok(())).optional()?.is_none() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The `token_hash` and `user_id` columns of an uploader (both NULL for an integration).
fn uploader_columns(uploader: Uploader) -> (Option<Vec<u8>>, Option<UserId>) {
    match uploader {
        Uploader::Visitor(hash) => (Some(hash.to_vec()), None),
        Uploader::Agent(user) => (None, Some(user)),
        Uploader::Integration => (None, None),
    }
}

fn meta_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<AttachmentMeta> {
    Ok(AttachmentMeta {
        id: r.get(0)?,
        name: r.get(1)?,
        content_type: r.get(2)?,
        size: r.get(3)?,
    })
}

/// The files of message `id`, in their order.
pub fn message_files(conn: &Connection, id: MessageId) -> Result<Vec<AttachmentMeta>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT public_id, name, content_type, size FROM attachments \
          WHERE message_id = ?1 ORDER BY id",
    )?;
    stmt.query_map([id], meta_from_row)?
        .collect::<Result<_, _>>()
        .map_err(Error::from)
}

/// Fills in each row's attachments with one indexed read over the rows' id range.
pub fn fill_attachments(conn: &Connection, rows: &mut [MessageRow]) -> Result<(), Error> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok(());
    };
    let (low, high) = (first.id.min(last.id), first.id.max(last.id));
    let mut stmt = conn.prepare_cached(
        "SELECT message_id, public_id, name, content_type, size FROM attachments \
         WHERE message_id BETWEEN ?1 AND ?2 ORDER BY id",
    )?;
    let mut found: HashMap<MessageId, Vec<AttachmentMeta>> = HashMap::new();
    let mut query = stmt.query(params![low, high])?;
    while let Some(r) = query.next()? {
        let meta = AttachmentMeta {
            id: r.get(1)?,
            name: r.get(2)?,
            content_type: r.get(3)?,
            size: r.get(4)?,
        };
        found.entry(r.get(0)?).or_default().push(meta);
    }
    if found.is_empty() {
        return Ok(());
    }
    for row in rows {
        if let Some(metas) = found.remove(&row.id) {
            row.attachments = metas;
        }
    }
    Ok(())
}

/// A complete upload by its public id, with whom it belongs to.
pub fn find_attachment(conn: &Connection, id: &str) -> Result<Option<StoredAttachment>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT a.id, a.public_id, a.name, a.content_type, a.size, a.site_id, a.token_hash, \
                    v.token_hash, coalesce(m.author = 'note', 0), a.conversation_id, a.user_id \
               FROM attachments a \
               LEFT JOIN conversations c ON c.id = a.conversation_id \
               LEFT JOIN visitors v ON v.id = c.visitor_id \
               LEFT JOIN messages m ON m.id = a.message_id \
              WHERE a.public_id = ?1 AND a.is_complete = 1",
        )?
        .query_row([id], |r| {
            Ok(StoredAttachment {
                row: r.get(0)?,
                meta: AttachmentMeta {
                    id: r.get(1)?,
                    name: r.get(2)?,
                    content_type: r.get(3)?,
                    size: r.get(4)?,
                },
                site_id: r.get(5)?,
                uploader_token_hash: r.get(6)?,
                conversation_token_hash: r.get(7)?,
                is_on_note: r.get(8)?,
                conversation_id: r.get(9)?,
                user_id: r.get(10)?,
            })
        })
        .optional()?)
}

/// An upload's bytes, its chunks joined in order.
pub fn read_attachment_data(conn: &Connection, row: i64) -> Result<Vec<u8>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT data FROM attachment_chunks WHERE attachment_id = ?1 ORDER BY seq",
    )?;
    let mut data = Vec::new();
    let mut chunks = stmt.query([row])?;
    while let Some(r) = chunks.next()? {
        data.extend_from_slice(r.get_ref(0)?.as_blob().map_err(rusqlite::Error::from)?);
    }
    Ok(data)
}

/// Stores an image's thumbnail beside its upload.
pub fn insert_attachment_thumbnail(
    conn: &Connection,
    row: i64,
    content_type: &str,
    data: &[u8],
) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO attachment_thumbnails (attachment_id, content_type, data) \
         VALUES (?1, ?2, ?3)",
    )?
    .execute(params![row, content_type, data])?;
    Ok(())
}

/// Which bytes of an attachment a request wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachmentPart {
    File,
    /// An image's thumbnail, or the image itself when none was made (an image the decoder
    /// could not read, or one uploaded before thumbnails); nothing for other files.
    Thumbnail,
}

/// What to serve of `stored` for `part`: its description (with the thumbnail's type and size
/// for a thumbnail) and its bytes; `None` for the thumbnail of a file that is not an image.
pub fn read_attachment_part(
    conn: &Connection,
    stored: StoredAttachment,
    part: AttachmentPart,
) -> Result<Option<(AttachmentMeta, Vec<u8>)>, Error> {
    if part == AttachmentPart::Thumbnail {
        if !stored.meta.content_type.starts_with("image/") {
            return Ok(None);
        }
        let thumb: Option<(String, Vec<u8>)> = conn
            .prepare_cached(
                "SELECT content_type, data FROM attachment_thumbnails WHERE attachment_id = ?1",
            )?
            .query_row([stored.row], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        if let Some((content_type, data)) = thumb {
            let size = i64::try_from(data.len()).unwrap_or(i64::MAX);
            let meta = AttachmentMeta {
                content_type,
                size,
                ..stored.meta
            };
            return Ok(Some((meta, data)));
        }
    }
    let data = read_attachment_data(conn, stored.row)?;
    Ok(Some((stored.meta, data)))
}

/// Every file of `visitor`'s conversations and their uploads no message took, with the bytes,
/// in upload order (for an export). A file the browser uploaded for a verified user's message
/// is the user's, not the browser's anonymous visitor's.
pub fn list_visitor_files(
    conn: &Connection,
    visitor: VisitorId,
) -> Result<Vec<(AttachmentMeta, Vec<u8>)>, Error> {
    let found: Vec<(i64, AttachmentMeta)> = conn
        .prepare_cached(
            "SELECT a.id, a.public_id, a.name, a.content_type, a.size FROM attachments a \
              WHERE a.is_complete = 1 AND (a.conversation_id IN \
                    (SELECT id FROM conversations WHERE visitor_id = ?1) \
                 OR (a.message_id IS NULL \
                     AND a.token_hash = (SELECT token_hash FROM visitors WHERE id = ?1))) \
              ORDER BY a.id",
        )?
        .query_map([visitor], |r| {
            Ok((
                r.get(0)?,
                AttachmentMeta {
                    id: r.get(1)?,
                    name: r.get(2)?,
                    content_type: r.get(3)?,
                    size: r.get(4)?,
                },
            ))
        })?
        .collect::<Result<_, _>>()?;
    found
        .into_iter()
        .map(|(row, meta)| Ok((meta, read_attachment_data(conn, row)?)))
        .collect()
}

/// Deletes up to `limit` uploads that no message took and that started at or before `cutoff`
/// (Unix ms), complete or not; their chunks go by cascade. Returns how many went.
pub fn delete_unattached_attachments(
    conn: &Connection,
    cutoff: i64,
    limit: usize,
) -> Result<usize, Error> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    Ok(conn
        .prepare_cached(
            "DELETE FROM attachments WHERE id IN (SELECT id FROM attachments \
              WHERE message_id IS NULL AND created_at <= ?1 ORDER BY created_at LIMIT ?2)",
        )?
        .execute(params![cutoff, limit])?)
}

/// Deletes the uploads of the visitor with this token hash that no message took (those that
/// one did go with their message). For an erasure.
pub fn delete_visitor_uploads(conn: &Connection, token_hash: &[u8]) -> Result<usize, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM attachments WHERE token_hash = ?1 AND message_id IS NULL")?
        .execute([token_hash])?)
}

/// The largest attachment `site` accepts, in bytes (0: none).
pub fn find_attachment_limit(conn: &Connection, site: SiteId) -> Result<u64, Error> {
    let bytes: i64 = conn
        .prepare_cached("SELECT attachment_max_bytes FROM sites WHERE id = ?1")?
        .query_row([site], |r| r.get(0))?;
    Ok(u64::try_from(bytes).unwrap_or(0))
}

/// Sets the largest attachment `site` accepts, in bytes (the caller checked the range).
pub fn set_attachment_limit(conn: &Connection, site: SiteId, bytes: u64) -> Result<(), Error> {
    conn.prepare_cached("UPDATE sites SET attachment_max_bytes = ?2 WHERE id = ?1")?
        .execute(params![site, i64::try_from(bytes).unwrap_or(i64::MAX)])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> Connection {
        let mut conn = Connection::open_in_memory().expect("open");
        conn.pragma_update(None, "foreign_keys", "ON").expect("fk");
        crate::store::apply_migrations(&mut conn).expect("migrate");
        conn.execute_batch(
            "INSERT INTO sites (id, key, name, created_at) VALUES (1, 's_1', 'Shop', 0);
             INSERT INTO visitors (id, site_id, token_hash, first_seen_at, last_seen_at)
                  VALUES (1, 1, x'01', 0, 0);
             INSERT INTO conversations (id, site_id, visitor_id, status, created_at, last_message_at)
                  VALUES (1, 1, 1, 'open', 0, 0);
             INSERT INTO messages (id, conversation_id, author, visitor_id, client_id, body, created_at)
                  VALUES (1, 1, 'visitor', 1, 'c1', '', 0);",
        )
        .expect("seed");
        conn
    }

    fn upload(conn: &Connection, id: &str, who: Uploader, chunks: &[&[u8]]) -> i64 {
        let new = NewAttachment {
            site_id: SiteId(1),
            uploader: who,
            meta: AttachmentMeta {
                id: id.to_owned(),
                name: "a.txt".to_owned(),
                content_type: "text/plain".to_owned(),
                size: 3,
            },
            now: 1000,
        };
        let row = insert_attachment(conn, &new).expect("insert");
        for (seq, chunk) in (0..).zip(chunks) {
            let is_last = seq as usize + 1 == chunks.len();
            insert_attachment_chunk(conn, row, seq, chunk, is_last).expect("chunk");
        }
        row
    }

    #[test]
    fn chunks_read_back_in_order_and_only_the_uploader_attaches_once() {
        let conn = db();
        let mut hash = [0; 32];
        hash[0] = 7;
        let row = upload(&conn, "att_a", Uploader::Visitor(hash), &[b"ab", b"c"]);
        assert_eq!(read_attachment_data(&conn, row).expect("read"), b"abc");
        let take = |who, ids: &[String]| {
            attach_to_message(&conn, SiteId(1), who, MessageId(1), ConversationId(1), ids)
        };
        let ids = vec!["att_a".to_owned()];
        assert!(matches!(
            take(Uploader::Visitor([9; 32]), &ids),
            Err(Error::UnknownAttachment)
        ));
        assert_eq!(take(Uploader::Visitor(hash), &ids).expect("take").len(), 1);
        assert!(matches!(
            take(Uploader::Visitor(hash), &ids),
            Err(Error::UnknownAttachment)
        ));
    }

    #[test]
    fn deliveries_name_the_files_in_the_text() {
        let conn = db();
        let mut hash = [0; 32];
        hash[0] = 7;
        upload(&conn, "att_c", Uploader::Visitor(hash), &[b"abc"]);
        let ids = vec!["att_c".to_owned()];
        let who = Uploader::Visitor(hash);
        attach_to_message(&conn, SiteId(1), who, MessageId(1), ConversationId(1), &ids)
            .expect("take");
        let message = crate::store::load_delivery_message(&conn, MessageId(1))
            .expect("load")
            .expect("a message");
        assert_eq!(message.body, "[file: a.txt, 3 bytes]");
    }

    #[test]
    fn incomplete_uploads_cannot_be_attached_and_unattached_ones_are_swept() {
        let conn = db();
        let row = upload(&conn, "att_b", Uploader::Visitor([3; 32]), &[]);
        let ids = vec!["att_b".to_owned()];
        let taken = attach_to_message(
            &conn,
            SiteId(1),
            Uploader::Visitor([3; 32]),
            MessageId(1),
            ConversationId(1),
            &ids,
        );
        assert!(matches!(taken, Err(Error::UnknownAttachment)));
        insert_attachment_chunk(&conn, row, 0, b"x", false).expect("chunk");
        assert_eq!(
            delete_unattached_attachments(&conn, 999, 10).expect("sweep"),
            0
        );
        assert_eq!(
            delete_unattached_attachments(&conn, 1000, 10).expect("sweep"),
            1
        );
        let chunks: i64 = conn
            .query_row("SELECT count(*) FROM attachment_chunks", [], |r| r.get(0))
            .expect("count");
        assert_eq!(chunks, 0);
    }
}

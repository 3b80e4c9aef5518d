//! What a delivery needs to build its payload, read when the delivery is made (never copied into
//! the job).

use std::fmt::Write as _;

use rusqlite::{Connection, OptionalExtension};

use crate::values::Author;

use super::{AttachmentMeta, ConversationId, Error, MessageId, SiteId, VisitorId};

/// A message with its conversation's context.
#[derive(Debug, Clone)]
pub struct DeliveryMessage {
    pub id: MessageId,
    pub conversation_id: ConversationId,
    pub author: Author,
    pub author_name: Option<String>,
    pub body: String,
    pub created_at: i64,
    pub site_id: SiteId,
    pub site_name: String,
    pub visitor_id: VisitorId,
    pub visitor_name: Option<String>,
    pub visitor_email: Option<String>,
    pub visitor_page: Option<String>,
    /// Its files in their order, also named in `body`.
    pub files: Vec<AttachmentMeta>,
}

/// The message and its context, if it still exists. Its files are listed in `files` and named in
/// the text, one line each (`[file: invoice.pdf, 48213 bytes]`), for destinations that show
/// only text; Slack gets the files themselves after the text.
pub fn load_delivery_message(
    conn: &Connection,
    id: MessageId,
) -> Result<Option<DeliveryMessage>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT m.id, m.conversation_id, m.author, m.author_name, m.body, m.created_at, \
                s.id, s.name, v.id, v.name, v.email, v.last_page \
           FROM messages m \
           JOIN conversations c ON c.id = m.conversation_id \
           JOIN sites s ON s.id = c.site_id \
           JOIN visitors v ON v.id = c.visitor_id \
          WHERE m.id = ?1",
    )?;
    let found = stmt
        .query_row([id], |r| {
            Ok(DeliveryMessage {
                id: r.get(0)?,
                conversation_id: r.get(1)?,
                author: r.get(2)?,
                author_name: r.get(3)?,
                body: r.get(4)?,
                created_at: r.get(5)?,
                site_id: r.get(6)?,
                site_name: r.get(7)?,
                visitor_id: r.get(8)?,
                visitor_name: r.get(9)?,
                visitor_email: r.get(10)?,
                visitor_page: r.get(11)?,
                files: Vec::new(),
            })
        })
        .optional()?;
    let Some(mut message) = found else {
        return Ok(None);
    };
    message.files = super::message_files(conn, id)?;
    add_file_lines(&mut message.body, &message.files);
    Ok(Some(message))
}

/// Names each of `files` at the end of `body`, one line each (`[file: invoice.pdf, 48213
/// bytes]`): what a destination that shows only text (and a visitor's transcript) gets of them.
pub fn add_file_lines(body: &mut String, files: &[AttachmentMeta]) {
    for file in files {
        if !body.is_empty() {
            body.push('\n');
        }
        let _ = write!(body, "[file: {}, {} bytes]", file.name, file.size);
    }
}

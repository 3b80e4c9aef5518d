//! Storage for the IMAP mailbox set on the email page: one row at most, its password sealed
//! (the store carries the envelope, it cannot open it).

use rusqlite::{Connection, OptionalExtension, params};

use super::Error;
use crate::secrets::Sealed;

/// The mailbox as stored.
#[derive(Debug, Clone)]
pub struct ImapMailboxRow {
    pub host: String,
    pub port: u16,
    /// Implicit TLS; otherwise in clear.
    pub is_tls: bool,
    pub user: String,
    pub password: Sealed,
    pub folder: String,
    pub poll_ms: i64,
    pub updated_at: i64,
}

/// The mailbox set on the page, if any.
pub fn find_imap_mailbox(conn: &Connection) -> Result<Option<ImapMailboxRow>, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT host, port, tls, user, password, folder, poll_ms, updated_at \
               FROM imap_mailbox WHERE id = 1",
        )?
        .query_row([], |r| {
            Ok(ImapMailboxRow {
                host: r.get(0)?,
                port: r.get(1)?,
                is_tls: r.get::<_, String>(2)? == "implicit",
                user: r.get(3)?,
                password: Sealed::from_stored(r.get(4)?),
                folder: r.get(5)?,
                poll_ms: r.get(6)?,
                updated_at: r.get(7)?,
            })
        })
        .optional()?)
}

/// Sets the mailbox (replacing the one before).
pub fn upsert_imap_mailbox(conn: &Connection, row: &ImapMailboxRow) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO imap_mailbox (id, host, port, tls, user, password, folder, poll_ms, updated_at) \
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
         ON CONFLICT (id) DO UPDATE SET host = ?1, port = ?2, tls = ?3, user = ?4, password = ?5, \
                                       folder = ?6, poll_ms = ?7, updated_at = ?8",
    )?
    .execute(params![
        row.host,
        row.port,
        if row.is_tls { "implicit" } else { "none" },
        row.user,
        row.password.as_stored(),
        row.folder,
        row.poll_ms,
        row.updated_at
    ])?;
    Ok(())
}

/// Forgets the mailbox; false if none was set.
pub fn delete_imap_mailbox(conn: &Connection) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached("DELETE FROM imap_mailbox WHERE id = 1")?
        .execute([])?
        > 0)
}

//! Install-wide settings stored in the database.

use rusqlite::{Connection, OptionalExtension, params};

use super::Error;

/// Returns the secret named `key`, creating 32 random bytes the first time.
pub fn load_or_create_secret(conn: &Connection, key: &str) -> Result<Vec<u8>, Error> {
    let existing: Option<Vec<u8>> = conn
        .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?;
    if let Some(secret) = existing {
        return Ok(secret);
    }
    let secret: [u8; 32] = rand::random();
    conn.execute(
        "INSERT INTO settings (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
        params![key, secret.as_slice()],
    )?;
    // Read back: another process (a CLI command) may have won the race.
    Ok(
        conn.query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
            r.get(0)
        })?,
    )
}

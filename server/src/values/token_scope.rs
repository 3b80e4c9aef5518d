//! What an API token may do: the `api_tokens.scope` column as a type.

use rusqlite::ToSql;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};

/// An API token's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenScope {
    /// Reads only: `GET` and `HEAD` requests.
    Read,
    /// Everything its user may do.
    ReadWrite,
}

impl TokenScope {
    /// The stored and displayed form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::ReadWrite => "read-write",
        }
    }

    /// Reads the stored form; `None` for anything the schema does not allow.
    pub fn parse(raw: &str) -> Option<Self> {
        [Self::Read, Self::ReadWrite]
            .into_iter()
            .find(|scope| scope.as_str() == raw)
    }
}

impl ToSql for TokenScope {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for TokenScope {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let raw = value.as_str()?;
        Self::parse(raw).ok_or_else(|| FromSqlError::Other(format!("unknown scope {raw}").into()))
    }
}

//! Who wrote a message: the `messages.author` column as a type, so the layers compare variants
//! instead of strings that a typo would silently never match.

use rusqlite::ToSql;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSqlOutput, ValueRef};

/// The author of a message, as `migrations/0001_core.sql` allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Author {
    /// The site's visitor, through the widget.
    Visitor,
    /// An agent's reply, from the inbox, the API or an integration; the visitor sees it.
    Agent,
    /// An agent's private note: agents see it, the visitor and the integrations never do.
    Note,
    /// A line of the conversation's own history ("Ana closed this conversation"), for agents.
    System,
}

impl Author {
    /// The stored and wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Visitor => "visitor",
            Self::Agent => "agent",
            Self::Note => "note",
            Self::System => "system",
        }
    }

    /// Reads the stored form; `None` for anything the schema does not allow.
    pub fn parse(raw: &str) -> Option<Self> {
        [Self::Visitor, Self::Agent, Self::Note, Self::System]
            .into_iter()
            .find(|author| author.as_str() == raw)
    }
}

impl ToSql for Author {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for Author {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let raw = value.as_str()?;
        Self::parse(raw).ok_or_else(|| FromSqlError::Other(format!("unknown author {raw}").into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_author_reads_back_from_its_stored_form() {
        for author in [Author::Visitor, Author::Agent, Author::Note, Author::System] {
            assert_eq!(Author::parse(author.as_str()), Some(author));
        }
        assert_eq!(Author::parse("Agent"), None);
    }
}

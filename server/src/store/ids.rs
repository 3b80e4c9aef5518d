//! Typed row ids, so a conversation id can never be passed where a message id is expected.

use rusqlite::types::{FromSql, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

macro_rules! id_type {
    ($($(#[$doc:meta])* $name:ident),+ $(,)?) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
                self.0.to_sql()
            }
        }

        impl FromSql for $name {
            fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
                i64::column_result(value).map(Self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    )+};
}

id_type!(
    /// A row of `sites`.
    SiteId,
    /// A row of `visitors`.
    VisitorId,
    /// A row of `conversations`.
    ConversationId,
    /// A row of `messages`; ids only grow, so clients resume "after id N".
    MessageId,
    /// A row of `users`.
    UserId,
    /// A row of `integrations`.
    IntegrationId,
    /// A row of `jobs`.
    JobId,
    /// A row of `tags`.
    TagId,
);

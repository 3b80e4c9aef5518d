//! Privacy by construction (issue #18, docs/privacy.md): the retention purge per site, finding
//! and exporting everything about a person, and erasing it. Deletion goes through the writer in
//! bounded chunks, so the widget never waits behind it; the SQL is in `store/purge.rs` and
//! `store/export.rs`.

mod erasure;
mod export;
mod retention;

pub use erasure::{
    Requester, Step, Via, erase_step, erase_visitor, erase_visitor_of_token, export_visitor,
    read_erased, record_export,
};
pub use export::{
    EXPORT_VERSION, PersonData, PersonQuery, conversation_json, find_people, ndjson_line,
};
pub use retention::{PURGE_CHUNK, RECLAIM_STEP, RETENTION_EVERY, purge_due, spawn_retention};

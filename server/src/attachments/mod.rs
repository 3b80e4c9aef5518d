//! Attachments (issue #16, docs/widget.md "Attachments"): what a file is (sniffed from its
//! bytes, never from its name or the client's type), stripping image metadata, thumbnails of
//! images, safe file names, storing uploads in short chunked writes, and sweeping uploads no
//! message took.
//! Knows nothing of HTTP; the SQL is in `store/attachments.rs`.

mod described;
mod kind;
mod name;
mod strip;
mod thumb;
mod upload;

pub use described::file_json;
pub use kind::Kind;
pub use name::{content_disposition, sanitise_name};
pub use strip::strip_metadata;
pub use upload::{
    CHUNK_BYTES, Error, HARD_CAP_BYTES, MAX_PER_MESSAGE, SWEEP_AFTER, spawn_sweep, store_upload,
    sweep_unattached,
};

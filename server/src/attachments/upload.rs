//! Storing an upload and sweeping the ones no message took. The bytes go through the writer in
//! [`CHUNK_BYTES`] pieces, each its own short write, so a visitor's text message queued behind
//! a 10 MB upload waits for one chunk, never for the whole file (docs/capacity.md).

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::clock::{millis, now_ms};
use crate::store::{self, AttachmentMeta, NewAttachment, SiteId, Uploader, Writer};

use super::strip::Malformed;
use super::thumb::{Refused, Thumbnail, TooLarge, make_thumbnail};
use super::{Kind, sanitise_name, strip_metadata};

/// Bytes per writer transaction of an upload.
pub const CHUNK_BYTES: usize = 256 * 1024;
/// No site may accept more than this per file, whatever its setting (the schema checks it too).
pub const HARD_CAP_BYTES: u64 = 25 * 1024 * 1024;
/// Attachments one message may take.
pub const MAX_PER_MESSAGE: usize = 10;
/// An upload no message took within this long is deleted.
pub const SWEEP_AFTER: Duration = Duration::from_hours(1);
/// Uploads deleted per writer transaction by the sweep (each up to the 25 MiB cap).
const SWEEP_CHUNK: usize = 8;

/// Why an upload was not stored.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not on the allow-list (decided from the bytes).
    #[error("this type of file is not accepted")]
    Unsupported,
    /// An image whose structure does not hold together.
    #[error(transparent)]
    Malformed(#[from] Malformed),
    /// An image declaring more pixels than Porch decodes (a decompression bomb, or simply huge).
    #[error(transparent)]
    TooLarge(#[from] TooLarge),
    #[error(transparent)]
    Store(#[from] store::Error),
    /// The blocking task that checks the file did not finish (a panic, or shutdown).
    #[error("the file could not be checked")]
    Interrupted,
}

impl From<Refused> for Error {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::TooLarge(err) => Self::TooLarge(err),
            Refused::Unreadable(err) => Self::Malformed(err),
        }
    }
}

/// The kind of `data`, its bytes without metadata, and an image's thumbnail.
fn check(data: &[u8]) -> Result<(Kind, Vec<u8>, Option<Thumbnail>), Error> {
    let kind = Kind::sniff(data).ok_or(Error::Unsupported)?;
    let clean = strip_metadata(kind, data)?;
    let thumb = make_thumbnail(kind, &clean)?;
    Ok((kind, clean, thumb))
}

/// Held while a file is checked and its thumbnail made: one at a time in the whole server.
static CHECKING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(1);

/// Sniffs `data`, strips an image's metadata, makes its thumbnail, names it, and stores it in
/// chunks; returns what a message will show of it. Until its last chunk is written it cannot be
/// attached or served.
///
/// # Errors
/// [`Error::Unsupported`], [`Error::Malformed`] or [`Error::TooLarge`] for the file,
/// [`Error::Store`] when a write failed (the incomplete upload is then left for the sweep).
pub async fn store_upload(
    writer: &Arc<Writer>,
    site: SiteId,
    uploader: Uploader,
    raw_name: &str,
    data: Vec<u8>,
) -> Result<AttachmentMeta, Error> {
    // Reading 25 MiB for its type and structure takes long enough to stall the other tasks of
    // an async worker (measured: a text ack waited 1.6 s behind a 10 MB upload in a debug build);
    // decoding and scaling an image for its thumbnail takes longer still. One file at a time: a
    // decoded image takes up to 4 bytes a pixel (200 MB at the pixel cap) from a file of a few
    // KB, so uploads at once must queue rather than add up (four took 800 MB).
    let one_at_a_time = CHECKING.acquire().await.map_err(|_| Error::Interrupted)?;
    let checked = tokio::task::spawn_blocking(move || check(&data)).await;
    drop(one_at_a_time);
    let (kind, clean, thumb) = checked.map_err(|_| Error::Interrupted)??;
    let random: [u8; 16] = rand::random();
    let meta = AttachmentMeta {
        id: format!(
            "att_{}",
            data_encoding::BASE32_NOPAD
                .encode(&random)
                .to_ascii_lowercase()
        ),
        name: sanitise_name(raw_name, kind),
        content_type: kind.content_type().to_owned(),
        size: i64::try_from(clean.len()).unwrap_or(i64::MAX),
    };
    let new = NewAttachment {
        site_id: site,
        uploader,
        meta: meta.clone(),
        now: now_ms(),
    };
    // The thumbnail is written with the row, so a complete upload always has it.
    let row = writer
        .write(move |c| {
            let row = store::insert_attachment(c, &new)?;
            if let Some(thumb) = thumb {
                store::insert_attachment_thumbnail(c, row, thumb.content_type, &thumb.data)?;
            }
            Ok(row)
        })
        .await?;
    let count = clean.len().div_ceil(CHUNK_BYTES);
    for (seq, chunk) in (0u32..).zip(clean.chunks(CHUNK_BYTES)) {
        let (chunk, is_last) = (chunk.to_vec(), seq as usize + 1 == count);
        writer
            .write(move |c| store::insert_attachment_chunk(c, row, seq, &chunk, is_last))
            .await?;
    }
    Ok(meta)
}

/// Deletes, as of `now` (Unix ms), every upload that no message took within [`SWEEP_AFTER`],
/// a few per writer transaction. Returns how many went.
///
/// # Errors
/// A failed write; what was committed before it stays deleted.
pub async fn sweep_unattached(writer: &Arc<Writer>, now: i64) -> Result<usize, store::Error> {
    let cutoff = now.saturating_sub(millis(SWEEP_AFTER));
    let mut total = 0;
    let swept = loop {
        let step = writer
            .write(move |c| store::delete_unattached_attachments(c, cutoff, SWEEP_CHUNK))
            .await;
        match step {
            Ok(step) if step == SWEEP_CHUNK => total += step,
            Ok(step) => break Ok(total + step),
            Err(err) => break Err(err),
        }
    };
    // Their bytes must not stay readable in the WAL, also when a later chunk failed.
    if swept.as_ref().map_or(total, |n| *n) > 0 {
        store::truncate_wal_after_deleting(writer).await;
    }
    swept
}

/// Runs [`sweep_unattached`] every `every` until shutdown.
pub fn spawn_sweep(writer: &Arc<Writer>, every: Duration, shutdown: &CancellationToken) {
    let (writer, shutdown) = (Arc::clone(writer), shutdown.clone());
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => break,
            }
            match sweep_unattached(&writer, now_ms()).await {
                Ok(0) => {}
                Ok(swept) => tracing::info!(swept, "deleted uploads no message took"),
                Err(err) => tracing::warn!(error = %err, "attachment sweep failed"),
            }
        }
    });
}

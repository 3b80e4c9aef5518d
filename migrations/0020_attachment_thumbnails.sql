-- Thumbnails of image attachments (docs/widget.md "Attachments"): at most 320 pixels a side,
-- made when the image is uploaded and written in the same transaction as its `attachments`
-- row, so a complete upload always has its thumbnail (an image the decoder could not read has
-- none, and is then shown itself). One row each: a thumbnail is a few KB, far under a chunk.
-- In the same file as the attachments, so Litestream backs them up and deleting an attachment
-- (sweep, erasure, retention) deletes its thumbnail by cascade. Forward-only: never edit this
-- file once released.
CREATE TABLE attachment_thumbnails (
    attachment_id INTEGER PRIMARY KEY REFERENCES attachments (id) ON DELETE CASCADE,
    -- image/jpeg for JPEG photos, image/png for the rest.
    content_type  TEXT NOT NULL,
    data          BLOB NOT NULL
) STRICT;

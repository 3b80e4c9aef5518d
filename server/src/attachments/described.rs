//! A message's file as the API and the webhooks describe it (docs/api.md, "messages"): one shape,
//! so a client that reads one reads the other.

use serde_json::{Value, json};

use crate::store::{AttachmentMeta, ConversationId};

/// `{"id", "name", "type", "size", "url"}`, with `url` the file's API address under `base`: empty
/// for the API's own answers (a path on the same host), the public URL in a webhook body, which
/// its receiver reads elsewhere. Either way the API reads it with a token.
pub fn file_json(base: &str, conversation: ConversationId, file: &AttachmentMeta) -> Value {
    json!({
        "id": file.id,
        "name": file.name,
        "type": file.content_type,
        "size": file.size,
        "url": format!("{base}/api/v1/conversations/{conversation}/attachments/{}", file.id),
    })
}

//! The end of a connection whose visitor was erased (docs/privacy.md). A child of `connection`,
//! so it works on the connection's own state.

use super::{Closed, Connection, ServerFrame, close, close_code};

impl Connection {
    /// The visitor's data was erased: this connection's visitor no longer exists, so it says so
    /// and closes; the widget forgets its token and starts again as a new visitor
    /// (docs/widget-protocol.md). When a verified user erased their data themselves, from this
    /// browser or another, this browser's own anonymous chats from before they signed in go
    /// too: once the widget forgets the token, nothing could reach them again.
    pub(super) async fn erased(&mut self, by_the_visitor: bool) -> Result<(), Closed> {
        if by_the_visitor && self.upload_hash != self.token_hash {
            let app = &self.app;
            let browser = self.upload_hash;
            let to_tell = (app.chat.hub().as_ref(), &app.jobs);
            let erased =
                crate::privacy::erase_visitor_of_token(&app.writer, &app.readers, to_tell, browser);
            if let Err(err) = erased.await {
                tracing::warn!(error = %err, "could not erase a browser's anonymous visitor");
            }
        }
        self.send(ServerFrame::Erased.to_json()).await?;
        close(&mut self.sink, close_code::NORMAL, "visitor data erased").await?;
        Err(Closed)
    }
}

//! The widget's `email` frame: a visitor leaves their address for replies while no agent is
//! online (docs/widget-protocol.md). A child of `connection`, so it works on the connection's
//! own state.

use std::time::Instant;

use super::message::{busy_or_unavailable, refused_as};
use super::{Closed, Connection, ServerFrame};

impl Connection {
    /// Stores the visitor's address (offline capture). The visitor row exists once they have
    /// written, so an address before the first message is refused.
    pub(super) async fn accept_email(&mut self, raw: &str) -> Result<(), Closed> {
        let email = raw.trim();
        let valid = crate::values::is_visitor_email(email);
        let Some(visitor) = self.visitor_id else {
            let why = "An address is taken once the visitor has sent a message.";
            return self.send_invalid(why, None).await;
        };
        if !valid {
            return self
                .send_invalid("Please check the email address.", None)
                .await;
        }
        // Each address stored is a write: charged to the visitor's rate like a message, so a
        // loop of `email` frames is refused in memory and costs other sites nothing.
        let site = &self.site;
        let admitted = self.app.brakes.admit_message(
            site.id,
            site.limits,
            self.visitor_key,
            self.peer.ip,
            false,
            Instant::now(),
        );
        let charged = match admitted {
            Ok(charged) => charged,
            Err(refusal) => {
                let (code, wait) = refused_as(refusal);
                return self.send_error(code, Some(wait), None).await;
            }
        };
        let saved = self
            .app
            .chat
            .set_visitor_email(visitor, email.to_owned())
            .await;
        if saved.is_err() {
            self.app.brakes.give_back(charged);
        }
        match saved {
            Ok(()) => {}
            // Erased by another process (`porch erase`), which could not tell this connection:
            // it says so now, as for a message, rather than confirm an address stored nowhere.
            Err(crate::chat::Error::NotFound(_)) => return self.erased(false).await,
            // As for a message: `busy` or `unavailable`, each with its wait.
            Err(err) => {
                let (code, wait) = busy_or_unavailable(&err);
                return self.send_error(code, wait, None).await;
            }
        }
        self.send(ServerFrame::EmailSaved { email }.to_json()).await
    }
}

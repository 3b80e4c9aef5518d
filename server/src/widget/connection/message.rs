//! A visitor's message through the connection: checked, let through the brakes (and given back to
//! them when the server could not store it), handed to the writer, and answered `ack` after the
//! commit or with an error the client can act on. A child of `connection`, on its own state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream::FuturesUnordered;

use crate::chat::{self, ClientId};
use crate::clock::now_ms;
use crate::store::{self, NewVisitorMessage, StoredVisitorMessage, VisitorDetails};

use super::super::brake::Refusal;
use super::super::protocol::{ErrorCode, ServerFrame};
use super::{Closed, Connection, MAX_IN_FLIGHT, PendingWrite, UNAVAILABLE_RETRY, written_key};

/// How long a client should wait after `busy` (a full write queue drains in milliseconds).
const BUSY_RETRY: Duration = Duration::from_millis(250);

impl Connection {
    /// Validates a visitor message, asks the brakes, and hands it to the writer.
    pub(super) async fn accept_message(
        &mut self,
        raw_client_id: &str,
        raw_body: &str,
        attachments: Vec<String>,
        received: Instant,
        in_flight: &mut FuturesUnordered<PendingWrite>,
    ) -> Result<(), Closed> {
        let client_id = match ClientId::parse(raw_client_id) {
            Ok(id) => id,
            Err(why) => {
                return self.send_invalid(&why.0, Some(raw_client_id)).await;
            }
        };
        let body = match super::super::attachments::message_body(raw_body, &attachments) {
            Ok(body) => body,
            Err(why) => {
                return self.send_invalid(&why.0, Some(client_id.as_str())).await;
            }
        };
        let site = &self.site;
        let starts_conversation = !self.has_conversation;
        let admitted = self.app.brakes.admit_message(
            site.id,
            site.limits,
            self.visitor_key,
            self.peer.ip,
            starts_conversation,
            Instant::now(),
        );
        if let Err(refusal) = admitted
            && !self.writing.contains(&written_key(client_id.as_str()))
            && !self.is_stored(&client_id).await
        {
            let (code, wait) = refused_as(refusal);
            return self
                .send_error(code, Some(wait), Some(client_id.as_str()))
                .await;
        }
        // What the brakes charged (nothing for a resend they refused), given back below if the
        // server could not store it.
        let charged = admitted.ok();
        self.has_conversation = true;
        if self.visitor_id.is_none() {
            // Bounded: past the cap (only reachable through refused writes) an own message may be
            // echoed, which the protocol allows (the client matches it by client_id).
            if self.sent_before_visitor.len() < 2 * MAX_IN_FLIGHT {
                self.sent_before_visitor.push(client_id.as_str().to_owned());
            }
        }
        // Until one message is stored, each carries the context: a new visitor is created with
        // it, a returning one gets their current page, language and time zone.
        let details = if self.context_stored {
            VisitorDetails::default()
        } else {
            VisitorDetails {
                context: self.context.clone(),
                user_agent: self.peer.user_agent.clone(),
                ip: self.app.config.visitor_ip.stored(self.peer.ip),
            }
        };
        let new = NewVisitorMessage {
            site_id: site.id,
            visitor_id: self.visitor_id,
            token_hash: self.token_hash,
            upload_hash: self.upload_hash,
            details,
            client_id: client_id.clone(),
            body,
            attachments,
            now: now_ms(),
        };
        self.writing.push(written_key(client_id.as_str()));
        let app = Arc::clone(&self.app);
        let from = Some(self.hub_id);
        in_flight.push(Box::pin(async move {
            let result = app.chat.post_visitor_message(new, from).await;
            // Counted here, with the commit: this future is finished also when the connection
            // ended meanwhile (its ack then lost), and the message is stored all the same.
            match &result {
                Ok(stored) if !stored.is_duplicate => app.meters.record_stored(),
                // The writer busy, the disk unavailable: the server's own trouble is charged
                // to no brake, so a resend after `retry_after_ms` is not refused for it. A
                // resend or a guessed upload id is (docs/widget-protocol.md, "Idempotency").
                Err(err) if !is_the_senders(err) => {
                    if let Some(charged) = charged {
                        app.brakes.give_back(charged.message_only());
                    }
                }
                _ => {}
            }
            (client_id, received, result)
        }));
        Ok(())
    }

    /// True if this visitor's message `client_id` is stored: a resend after a reconnect, which
    /// gets its first `ack` even while the brakes refuse new messages (the write finds it and
    /// stores nothing). Read only when a brake refused, so it costs the hot path nothing.
    async fn is_stored(&self, client_id: &ClientId) -> bool {
        let Some(visitor) = self.visitor_id else {
            return false;
        };
        let client_id = client_id.as_str().to_owned();
        self.app
            .readers
            .read(move |c| store::has_visitor_message(c, visitor, &client_id))
            .await
            .unwrap_or(false)
    }

    /// Answers a finished write: `ack` after commit, or an error the client can act on. An ack is
    /// counted with its latency from the frame's arrival.
    pub(super) async fn on_stored(
        &mut self,
        client_id: &ClientId,
        received: Instant,
        result: Result<StoredVisitorMessage, chat::Error>,
    ) -> Result<(), Closed> {
        let key = written_key(client_id.as_str());
        if let Some(at) = self.writing.iter().position(|&id| id == key) {
            self.writing.swap_remove(at);
        }
        let stored = match result {
            Ok(stored) => stored,
            Err(err) => {
                let (code, wait) = match &err {
                    chat::Error::Store(store::Error::Busy) => busy_or_unavailable(&err),
                    chat::Error::Store(store::Error::UnknownAttachment) => {
                        (ErrorCode::UnknownAttachment, None)
                    }
                    // The visitor was erased by another process (`porch erase`), which could not
                    // tell this connection: it says so now, as a live erasure would.
                    chat::Error::Store(err)
                        if self.visitor_id.is_some() && err.names_a_missing_row() =>
                    {
                        return self.erased(false).await;
                    }
                    _ => {
                        crate::refusal_log::visitor_message_not_stored(&err);
                        busy_or_unavailable(&err)
                    }
                };
                return self.send_error(code, wait, Some(client_id.as_str())).await;
            }
        };
        let ack = ServerFrame::Ack {
            client_id: client_id.as_str(),
            id: stored.id,
            at: stored.created_at,
        };
        self.send(ack.to_json()).await?;
        self.app.meters.record_ack(received.elapsed());
        if stored.is_duplicate {
            if self.acked_copies.len() == MAX_IN_FLIGHT {
                self.acked_copies.remove(0);
            }
            self.acked_copies.push(stored.id);
        }
        self.typing.conversation = Some(stored.conversation_id);
        self.context_stored = true;
        if self.visitor_id.is_none() {
            // The visitor exists from this message on: subscribe, then send what was committed
            // for them before the subscription (an agent answering within milliseconds).
            self.visitor_id = Some(stored.visitor_id);
            self.subscribe(stored.visitor_id);
            // Its other tabs were told at the commit (`publish_visitor_message`).
            self.newcomer = None;
            self.send_after(stored.visitor_id).await?;
            self.sent_before_visitor = Vec::new();
        }
        Ok(())
    }
}

/// How a write the server could not make is answered: `busy` (the writer's queue full) or
/// `unavailable`, each with how long to wait before the resend.
pub(super) fn busy_or_unavailable(err: &chat::Error) -> (ErrorCode, Option<Duration>) {
    match err {
        chat::Error::Store(store::Error::Busy) => (ErrorCode::Busy, Some(BUSY_RETRY)),
        _ => (ErrorCode::Unavailable, Some(UNAVAILABLE_RETRY)),
    }
}

/// Whether a visitor message was not stored for what it carried (an upload id that is not the
/// visitor's) rather than for the server's own trouble.
fn is_the_senders(err: &chat::Error) -> bool {
    matches!(err, chat::Error::Store(store::Error::UnknownAttachment))
}

/// The error a brake's refusal is answered with, and the wait it names.
pub(super) fn refused_as(refusal: Refusal) -> (ErrorCode, Duration) {
    match refusal {
        Refusal::RateLimited(wait) => (ErrorCode::RateLimited, wait),
        Refusal::TooManyConversations(wait) => (ErrorCode::TooManyConversations, wait),
        Refusal::SiteBusy(wait) => (ErrorCode::SiteBusy, wait),
    }
}

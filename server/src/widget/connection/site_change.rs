//! A change an admin saved to the connection's site (docs/widget-protocol.md, "Connecting"): the
//! connection ends as a new connection would be refused, with `site_not_found` or
//! `origin_not_allowed` and close 1008, once the site is deleted or its page's origin is no
//! longer allowed; it asks the client to connect again (close 1012) when what `welcome` settled
//! changed (the pre-chat form the panel shows, whether it offers files, the secret that verified
//! a known visitor); other
//! settings (brakes, hours) it takes for its next messages. A child of `connection`, so it works
//! on the connection's own state.

use std::sync::Arc;

use futures_util::stream::FuturesUnordered;
use tokio::sync::broadcast::error::RecvError;

use crate::chat::{Site, SiteChange};

use super::{Closed, Connection, ErrorCode, PendingWrite, close, close_code};

impl Connection {
    pub(super) async fn on_site_change(
        &mut self,
        change: Result<Arc<SiteChange>, RecvError>,
        in_flight: &mut FuturesUnordered<PendingWrite>,
    ) -> Result<(), Closed> {
        let site = match change {
            Ok(change) if change.key == self.site.key => change.site.clone(),
            Ok(_) | Err(RecvError::Closed) => return Ok(()),
            // More changes than the buffer holds went by: read the site as it is now.
            Err(RecvError::Lagged(_)) => match self.app.sites.find(&self.site.key).await {
                Ok(site) => site,
                Err(_) => return Ok(()),
            },
        };
        let refusal = match site {
            None => ErrorCode::SiteNotFound,
            Some(site) if !site.allows_origin(&self.peer.origin) => {
                // Counted with the pages refused at connecting: the admin sees which page lost it.
                self.app.sites.note_refused_origin(&site, &self.peer.origin);
                ErrorCode::OriginNotAllowed
            }
            Some(site) if self.unsettles_welcome(&site) => {
                // The messages read are answered first; the client then connects again and
                // gets a `welcome` with the new form, or its visitor verified anew.
                self.answer_writes(in_flight).await?;
                let _ = close(&mut self.sink, close_code::RESTARTING, "site changed").await;
                return Err(Closed);
            }
            Some(site) => {
                self.site = site;
                return Ok(());
            }
        };
        // The messages being written are answered first, so every message the client sent
        // before the refusal has its ack or error, and it knows which are still to be sent.
        self.answer_writes(in_flight).await?;
        let _ = self.send_error(refusal, None, None).await;
        let _ = close(&mut self.sink, close_code::POLICY, refusal.message()).await;
        Err(Closed)
    }

    /// Whether `site` changed what this connection's `welcome` settled: the pre-chat form (the
    /// panel asks the one it was told), or, for a known visitor, the identity secret (a visitor
    /// verified with a replaced or removed secret must not stay verified).
    fn unsettles_welcome(&self, site: &Site) -> bool {
        site.prechat != self.site.prechat
            || site.takes_files != self.site.takes_files
            || (self.context.identity.is_some()
                && site.identity_secret != self.site.identity_secret)
    }
}

//! `GET /metrics`: the Prometheus exposition, never to the open internet by default. With
//! `PORCH_METRICS_TOKEN` set, the bearer token is required from every address. Without it, only
//! a scraper that talks to Porch directly from a loopback or private address is answered: a
//! request that came through a proxy (it carries forwarding headers, or its peer is one of the
//! trusted proxies) is refused, because a proxy's own address is local whoever the client is, and
//! forwarding headers are only as honest as every proxy on the way. See docs/operations.md.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::admin::session::tokens_match;
use crate::metrics::DeliveryGauges;
use crate::state::AppState;

use super::ApiError;

/// Headers a reverse proxy adds; their presence means the TCP peer is not the client.
const FORWARDING_HEADERS: [&str; 3] = ["x-forwarded-for", "forwarded", "x-real-ip"];

/// Loopback, RFC 1918 / RFC 4193 private, and link-local addresses.
fn is_local(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        IpAddr::V6(v6) => v6.is_loopback() || v6.is_unique_local() || v6.is_unicast_link_local(),
    }
}

/// Whether this request may read the metrics.
fn is_allowed(app: &AppState, peer: SocketAddr, headers: &HeaderMap) -> bool {
    if let Some(token) = &app.config.metrics_token {
        let given = super::auth::bearer(headers).unwrap_or("");
        return tokens_match(given, token.expose());
    }
    let peer_ip = peer.ip().to_canonical();
    let is_proxied = FORWARDING_HEADERS.iter().any(|h| headers.contains_key(*h))
        || app.config.trusted_proxies.contains(&peer_ip);
    !is_proxied && is_local(peer_ip)
}

/// `GET /metrics`.
pub async fn metrics(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if !is_allowed(&app, peer, &headers) {
        // Says the rule in force: with a token set, loopback needs it too.
        let rule = if app.config.metrics_token.is_some() {
            "Metrics need the metrics token: Authorization: Bearer <token>."
        } else {
            "Metrics are served without a token only to a loopback or private address that \
             talks to Porch directly: not through a proxy (a forwarding header, or a peer listed \
             in PORCH_TRUSTED_PROXIES). Set PORCH_METRICS_TOKEN to scrape otherwise."
        };
        return ApiError::new(StatusCode::FORBIDDEN, "metrics_forbidden", rule).into_response();
    }
    // The rest of the figures are in memory: a database that cannot be read (it is stopping)
    // leaves out only the deliveries' gauges, and the log says why.
    let deliveries = match app.readers.read(DeliveryGauges::read).await {
        Ok(gauges) => Some(gauges),
        Err(err) => {
            tracing::warn!(error = %err, "metrics: the deliveries' state could not be read");
            None
        }
    };
    match crate::metrics::render(&app.meters, &app.writer, app.chat.hub(), deliveries) {
        Ok(text) => (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            text,
        )
            .into_response(),
        Err(_) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "The metrics could not be rendered.",
        )
        .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_means_loopback_private_or_link_local() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.9",
            "172.20.0.2",
            "::1",
            "fd00::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_local(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["203.0.113.5", "8.8.8.8", "2001:db8::1", "::ffff:8.8.8.8"] {
            assert!(!is_local(ip.parse().expect("ip")), "{ip}");
        }
    }
}

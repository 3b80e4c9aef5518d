//! The client's address: the TCP peer, or, when the peer is a trusted reverse proxy, the last
//! `X-Forwarded-For` entry that is not itself a trusted proxy.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;

use crate::state::AppState;

/// The address brakes and logs should attribute a request to.
pub fn client_ip(peer: SocketAddr, headers: &HeaderMap, trusted_proxies: &[IpAddr]) -> IpAddr {
    let peer_ip = peer.ip().to_canonical();
    if !trusted_proxies.contains(&peer_ip) {
        return peer_ip;
    }
    // Proxies append; read from the right and skip our own proxies.
    headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .rev()
        .filter_map(|entry| entry.trim().parse::<IpAddr>().ok())
        .map(|ip| ip.to_canonical())
        .find(|ip| !trusted_proxies.contains(ip))
        .unwrap_or(peer_ip)
}

/// [`client_ip`] as an extractor, for handlers that record where a change came from.
pub struct ClientIp(pub IpAddr);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &AppState) -> Result<Self, Infallible> {
        // Every connection is served with its peer address; the fallback only keeps this total.
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)), |c| c.0);
        Ok(Self(client_ip(
            peer,
            &parts.headers,
            &app.config.trusted_proxies,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(xff: &str) -> HeaderMap {
        let mut map = HeaderMap::new();
        if let Ok(value) = xff.parse() {
            map.insert("x-forwarded-for", value);
        }
        map
    }

    #[test]
    fn untrusted_peers_cannot_spoof_their_address() {
        let peer: SocketAddr = ([203, 0, 113, 9], 5000).into();
        assert_eq!(
            client_ip(peer, &headers("1.2.3.4"), &[]),
            IpAddr::from([203, 0, 113, 9])
        );
    }

    #[test]
    fn a_trusted_proxy_passes_on_the_client() {
        let proxy: IpAddr = [10, 0, 0, 2].into();
        let peer = SocketAddr::new(proxy, 5000);
        let ip = client_ip(peer, &headers("6.6.6.6, 198.51.100.7, 10.0.0.2"), &[proxy]);
        assert_eq!(ip, IpAddr::from([198, 51, 100, 7]));
    }
}

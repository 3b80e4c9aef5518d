//! The SSRF guard for admin-supplied URLs (outgoing webhooks): a URL is checked when it is saved
//! (scheme, no credentials, the host resolves to allowed addresses) and again when connecting,
//! by a DNS resolver inside the HTTP client that drops every address in a special-purpose range.
//! Because the filter runs in the connector, the address checked is the address connected to:
//! re-pointing the name at 127.0.0.1 after the save (DNS rebinding) gains nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why a URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("not a valid URL")]
    Invalid,
    #[error("only http and https URLs are allowed")]
    Scheme,
    #[error("credentials in the URL are not allowed")]
    Credentials,
    #[error("a #fragment is never sent to the server; remove it")]
    Fragment,
    #[error("the host does not resolve: {0}")]
    Unresolvable(String),
    #[error("the host resolves to a private or special-purpose address ({0})")]
    Private(IpAddr),
}

/// Whether `ip` is an ordinary public unicast address. Refuses loopback, private (RFC 1918,
/// ULA), link-local (cloud metadata at 169.254.169.254), CGNAT, multicast, unspecified,
/// broadcast, documentation, benchmarking, reserved and translation ranges; IPv4 embedded in
/// IPv6 (mapped, compatible, NAT64, 6to4) is judged as the IPv4 address it carries.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let special = a == 0 // "this network"
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168)
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224; // multicast 224/4, reserved 240/4, broadcast
    !special
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    let special = ip.is_unspecified()
        || ip.is_loopback()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (segments[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (segments[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
        || (segments[0] & 0xff00) == 0xff00 // multicast
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || (segments[0] == 0x2001 && segments[1] < 0x0200) // TEREDO, ORCHID and other IETF assignments
        || segments[0] == 0x0100 && segments[1..4] == [0, 0, 0] // discard-only 100::/64
        || segments[0] == 0; // the rest of ::/16 (IPv4-compatible and reserved)
    !special
}

/// The IPv4 address carried in an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`),
/// NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:a.b.c.d::`) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let o = ip.octets();
    let tail = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _]
        | [0x64, 0xff9b, 0, 0, 0, 0, _, _]
        | [0x64, 0xff9b, 1, ..] => Some(tail),
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(tail),
        [0x2002, ..] => Some(Ipv4Addr::new(o[2], o[3], o[4], o[5])),
        _ => None,
    }
}

/// Checks a URL when an admin saves it: http(s), no credentials, and (unless private networks
/// are allowed) every address the host resolves to is public.
pub async fn check_url(raw: &str, allow_private: bool) -> Result<Url, Refused> {
    let url = Url::parse(raw.trim()).map_err(|_| Refused::Invalid)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Refused::Scheme);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refused::Credentials);
    }
    // Stored with a fragment, the URL would look like another endpoint's while requesting the
    // same one: two endpoints, every event twice.
    if url.fragment().is_some() {
        return Err(Refused::Fragment);
    }
    let host = url.host_str().ok_or(Refused::Invalid)?.to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|err| Refused::Unresolvable(err.to_string()))?
        .collect();
    if addrs.is_empty() {
        return Err(Refused::Unresolvable(host));
    }
    if !allow_private && let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
        return Err(Refused::Private(bad.ip()));
    }
    Ok(url)
}

/// Checks the host of a URL that names an IP address directly: the HTTP client connects to such
/// a host without asking the resolver, so the guard must look at it before sending.
pub fn check_literal_host(url: &Url, allow_private: bool) -> Result<(), Refused> {
    let host = url.host_str().unwrap_or_default();
    let Ok(ip) = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    else {
        return Ok(());
    };
    if allow_private || is_public(ip) {
        Ok(())
    } else {
        Err(Refused::Private(ip))
    }
}

/// The guard's refusal of a private address anywhere in an error's chain of causes: the
/// resolver's refusal reaches the delivery wrapped in the HTTP client's connect error, and must
/// be told apart from an ordinary failure to connect, which is worth retrying. A name that does
/// not resolve at all is not a refusal here: DNS failures are often passing.
pub fn private_refusal<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
    let mut next = Some(err);
    while let Some(cause) = next {
        // An `io::Error` shows its inner error's message but skips it as a source: look inside.
        let inner = cause
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .and_then(|inner| inner.downcast_ref::<Refused>());
        if let Some(refused @ Refused::Private(_)) = cause.downcast_ref::<Refused>().or(inner) {
            return Some(refused);
        }
        next = cause.source();
    }
    None
}

/// The resolver of the webhook HTTP client: the system's resolver, minus every address that is
/// not public (unless private networks are allowed). A name left with no address fails to
/// connect, which the delivery records as an error.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    pub allow_private: bool,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found
                .iter()
                .copied()
                .filter(|a| allow_private || is_public(a.ip()))
                .collect();
            if allowed.is_empty() {
                let refused = found.first().map(SocketAddr::ip);
                return Err(match refused {
                    Some(ip) => {
                        Box::new(Refused::Private(ip)) as Box<dyn std::error::Error + Send + Sync>
                    }
                    None => Box::new(Refused::Unresolvable(host)),
                });
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client never connects: the guard refuses loopback, the only address `localhost` has.
    #[tokio::test]
    async fn a_name_refused_when_connecting_is_found_in_the_client_error() {
        let client = super::super::HttpClients::build(false)
            .expect("client")
            .webhooks;
        let err = client
            .get("http://localhost:9/hook")
            .send()
            .await
            .expect_err("refused");
        assert!(
            matches!(private_refusal(&err), Some(Refused::Private(ip)) if ip.is_loopback()),
            "{err:?}"
        );
        let plain = std::io::Error::other("connection refused");
        assert_eq!(private_refusal(&plain), None);
    }

    fn public(s: &str) -> bool {
        is_public(s.parse().expect("address"))
    }

    #[test]
    fn special_purpose_ranges_are_refused() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "198.18.0.1",
            "192.0.2.5",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "2002:c0a8:0101::1",
        ] {
            assert!(!public(ip), "{ip} must be refused");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
        ] {
            assert!(public(ip), "{ip} must pass");
        }
    }

    #[tokio::test]
    async fn urls_are_checked_when_saved() {
        assert_eq!(
            check_url("ftp://example.com/", true).await,
            Err(Refused::Scheme)
        );
        assert_eq!(
            check_url("https://u:p@example.com/", true).await,
            Err(Refused::Credentials)
        );
        assert_eq!(
            check_url("https://example.com/hook#a", true).await,
            Err(Refused::Fragment)
        );
        assert!(matches!(
            check_url("http://127.0.0.1:9/hook", false).await,
            Err(Refused::Private(_))
        ));
        assert!(matches!(
            check_url("http://localhost:9/hook", false).await,
            Err(Refused::Private(_))
        ));
        assert!(check_url("http://127.0.0.1:9/hook", true).await.is_ok());
    }
}

//! The rules of the URL settings (`PORCH_PUBLIC_URL`, the API base URLs, the Litestream and
//! single sign-on URLs): absolute, with a host, no credentials, query or fragment; a refusal
//! names the setting and quotes the value without its user and password.

use std::net::IpAddr;

use reqwest::Url;

use super::rules::ConfigError;

/// The schemes a URL setting takes, as its rule says them, with an example.
struct Schemes {
    allowed: &'static [&'static str],
    said: &'static str,
    example: &'static str,
}

const HTTP_OR_HTTPS: Schemes = Schemes {
    allowed: &["http", "https"],
    said: "http:// or https://",
    example: "https://chat.example.com",
};

const PLAIN_HTTP: Schemes = Schemes {
    allowed: &["http"],
    said: "http://",
    example: "http://litestream:9090/metrics",
};

/// An absolute http(s) URL with a host, no credentials, query or fragment.
pub(super) fn http_url(variable: &'static str, raw: &str) -> Result<Url, ConfigError> {
    url_of(variable, raw, &HTTP_OR_HTTPS)
}

/// `raw` as a refusal quotes it: a user and password in it are left out, as the refusal for
/// them is the one time such a setting holds them, and the error goes to the log.
fn shown(raw: &str) -> String {
    // Up to the last `@`: a password may hold `/`, `?` or `#` (the very URLs that do not parse),
    // and leaving out part of a path or query too costs nothing in an error.
    let start = raw.find("://").map_or(0, |i| i + 3);
    match raw[start..].rfind('@') {
        Some(at) => format!("{}…@{}", &raw[..start], &raw[start + at + 1..]),
        None => raw.to_owned(),
    }
}

/// [`http_url`] of `schemes`, which every refusal names.
fn url_of(variable: &'static str, raw: &str, schemes: &Schemes) -> Result<Url, ConfigError> {
    let rule = |what: &str| {
        ConfigError::new(
            variable,
            format!(
                "must be an absolute {} URL {what} (got `{}`)",
                schemes.said,
                shown(raw)
            ),
        )
    };
    let such_as = format!("such as {}", schemes.example);
    let url = Url::parse(raw).map_err(|_| rule(&such_as))?;
    if !schemes.allowed.contains(&url.scheme()) || url.host_str().is_none() {
        return Err(rule(&such_as));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(rule("without a query (?) or fragment (#)"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(rule("without a user or password"));
    }
    Ok(url)
}

/// True if `url` names this host: `localhost` or a loopback address.
pub(super) fn is_loopback_host(url: &Url) -> bool {
    // IPv6 hosts come in brackets (`[::1]`).
    let host = url.host_str().unwrap_or_default();
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// Whether only this computer reaches `url` (a loopback host): a snippet pointing there works for
/// trying Porch on this machine and nowhere else, which the site page says.
pub fn reaches_only_this_machine(url: &str) -> bool {
    Url::parse(url).is_ok_and(|url| is_loopback_host(&url))
}

/// `PORCH_PUBLIC_URL`'s rule as a clap value parser, for the commands that bake the URL into a
/// snippet (`site add`, `site snippet`): the same input is refused as `serve` refuses it.
///
/// # Errors
/// The rule the value breaks, as `serve` words it.
pub fn public_url_arg(raw: &str) -> Result<String, String> {
    public_url(raw)
        .map(|()| normalized_public_url(raw))
        .map_err(|err| err.rule)
}

/// A valid `PORCH_PUBLIC_URL` as it is used: scheme and host in lower case (both are
/// case-insensitive, and the server decides on `https://` by the text: `HTTPS://chat…` once got
/// neither `Secure` cookies nor HSTS), the path as given, without a trailing slash.
pub fn normalized_public_url(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(url) => url.as_str().trim_end_matches('/').to_owned(),
        // Refused at start-up: never reached with a value that does not parse.
        Err(_) => raw.trim_end_matches('/').to_owned(),
    }
}

pub(super) fn public_url(raw: &str) -> Result<(), ConfigError> {
    let url = http_url("PORCH_PUBLIC_URL", raw)?;
    // Browsers cannot open a wildcard address.
    let host = url.host_str().unwrap_or_default();
    if host == "0.0.0.0" || host == "[::]" {
        return Err(ConfigError::new(
            "PORCH_PUBLIC_URL",
            format!("must name a host browsers can reach, not {host} (got `{raw}`)"),
        ));
    }
    Ok(())
}

/// Litestream's metrics endpoint: plain http (it serves no TLS), absolute, with a host, and every
/// refusal says so with an example that fits.
pub(super) fn litestream_url(raw: &str) -> Result<(), ConfigError> {
    url_of("PORCH_LITESTREAM_METRICS_URL", raw, &PLAIN_HTTP).map(drop)
}

pub(super) fn api_url(variable: &'static str, raw: &str) -> Result<(), ConfigError> {
    http_url(variable, raw).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_this_host_however_it_is_written() {
        for local in [
            "imap://localhost",
            "imap://127.0.0.1",
            "imap://[::1]",
            "imap://[::ffff:127.0.0.1]:143",
        ] {
            assert!(
                is_loopback_host(&Url::parse(local).expect(local)),
                "{local}"
            );
        }
        for far in ["imap://mail.example.com", "imap://[::ffff:192.0.2.1]"] {
            assert!(!is_loopback_host(&Url::parse(far).expect(far)), "{far}");
        }
    }

    #[test]
    fn a_refused_url_is_quoted_without_its_user_and_password() {
        for (raw, quoted) in [
            (
                "https://ann:S3cret@chat.example.com/x",
                "https://…@chat.example.com/x",
            ),
            (
                "https://ann:S3/cr#et@chat.example.com",
                "https://…@chat.example.com",
            ),
            ("ann:S3cret@chat.example.com", "…@chat.example.com"),
        ] {
            let err = http_url("PORCH_PUBLIC_URL", raw).expect_err("refused");
            assert!(!err.to_string().contains("S3"), "{err}");
            assert!(!err.to_string().contains("ann"), "{err}");
            assert!(
                err.to_string().contains(&format!("(got `{quoted}`)")),
                "{err}"
            );
        }
        let plain = http_url("PORCH_PUBLIC_URL", "ftp://chat.example.com").expect_err("ftp");
        assert!(plain.to_string().contains("(got `ftp://chat.example.com`)"));
    }

    #[test]
    fn litestream_metrics_urls_are_absolute_plain_http() {
        assert!(litestream_url("http://litestream:9090/metrics").is_ok());
        for bad in [
            "litestream:9090/metrics",
            "https://litestream:9090/metrics",
            "http://litestream:9090/metrics?x=1",
            "/metrics",
        ] {
            let refused = litestream_url(bad).expect_err(bad).rule;
            assert!(
                refused.starts_with("must be an absolute http:// URL ")
                    && !refused.contains("or https"),
                "{refused}"
            );
        }
    }

    #[test]
    fn a_public_url_is_used_with_its_scheme_and_host_in_lower_case() {
        assert_eq!(
            normalized_public_url("HTTPS://Chat.Example.COM"),
            "https://chat.example.com"
        );
        assert_eq!(
            normalized_public_url("http://127.0.0.1:8080/Porch/"),
            "http://127.0.0.1:8080/Porch"
        );
        assert_eq!(
            public_url_arg("HTTPS://X.Example").as_deref(),
            Ok("https://x.example")
        );
    }

    #[test]
    fn public_urls_are_absolute_http_without_query_or_fragment() {
        assert!(public_url("https://chat.example.com").is_ok());
        assert!(public_url("http://127.0.0.1:8080/porch/").is_ok());
        for bad in [
            "not a url",
            "chat.example.com",
            "ftp://chat.example.com",
            "https://chat.example.com/?a=1",
            "https://chat.example.com/#x",
            "https://user:pw@chat.example.com",
            "http://0.0.0.0:8080",
        ] {
            assert!(public_url(bad).is_err(), "{bad} accepted");
        }
    }
}

//! What to tell an admin about a request to a destination that got no HTTP answer: the cause in
//! a few words (the connection was refused, the name does not resolve, the TLS certificate was
//! refused and why, no answer in time), never the URL, which can hold a secret (a Discord
//! webhook's token, an endpoint's query). reqwest's own text says only "error sending request";
//! the cause is in its chain of sources, and a certificate's list of names can run to a
//! kilobyte, so only its first clause is kept.

/// Longest description kept: a stored error is shown in tables and health lines.
const MAX_CHARS: usize = 300;

/// Describes a failed request, without its URL.
pub fn describe(err: reqwest::Error) -> String {
    let is_timeout = err.is_timeout();
    described(&error_chain(&err.without_url()), is_timeout)
}

/// Certificate refusals rustls names only by their Rust variant
/// (`invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))`), in words. The first
/// that the text holds wins, so a longer name goes before a shorter one it contains.
const CERTIFICATE_WORDS: [(&str, &str); 5] = [
    (
        "CaUsedAsEndEntity",
        "the server shows a certificate authority's certificate as its own (a self-signed one?)",
    ),
    (
        "UnknownIssuer",
        "it is issued by an authority this server does not trust (a self-signed one?)",
    ),
    (
        "ExpiredRevocationList",
        "the revocation list it was checked against has expired",
    ),
    ("Expired", "it has expired"),
    ("NotValidYet", "it is not valid yet (check the clocks)"),
];

/// [`describe`] on an error's chain of texts (also for a mail server that gave no SMTP answer).
pub fn described(chain: &str, is_timeout: bool) -> String {
    let lower = chain.to_lowercase();
    let deepest = chain.rsplit(": ").next().unwrap_or_default();
    let text = if is_timeout {
        "no answer in time (timed out)".to_owned()
    } else if lower.contains("certificate") {
        // "…: invalid peer certificate: certificate not valid for name "x"; certificate is only
        // valid for DnsName(…), …": the deepest cause, without the list.
        let why = deepest.split("; ").next().unwrap_or_default();
        let why = CERTIFICATE_WORDS
            .iter()
            .find(|(variant, _)| why.contains(variant))
            .map_or(why, |(_, words)| words);
        format!("the TLS certificate was refused: {why}")
    } else if lower.contains("connection refused") {
        "could not connect: connection refused".to_owned()
    } else if lower.contains("dns error") || lower.contains("failed to lookup address") {
        format!("the host name does not resolve: {deepest}")
    } else {
        format!("no answer: {chain}")
    };
    text.chars().take(MAX_CHARS).collect()
}

/// An error and its sources, joined by `: `.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_refusal_says_why_without_the_list_of_names() {
        let chain = "error sending request: client error (Connect): invalid peer certificate: \
                     certificate not valid for name \"93.184.215.14\"; certificate is only valid \
                     for DnsName(\"archive.ubuntu.com\"), DnsName(\"a.example\")";
        assert_eq!(
            described(chain, false),
            "the TLS certificate was refused: certificate not valid for name \"93.184.215.14\""
        );
    }

    #[test]
    fn a_certificate_refusal_rustls_names_by_its_variant_is_said_in_words() {
        let chain = "Connection error: Connection error: invalid peer certificate: \
                     Other(OtherError(CaUsedAsEndEntity))";
        assert_eq!(
            described(chain, false),
            "the TLS certificate was refused: the server shows a certificate authority's \
             certificate as its own (a self-signed one?)"
        );
    }

    #[test]
    fn an_expired_revocation_list_is_not_called_an_expired_certificate() {
        let said = described("invalid peer certificate: ExpiredRevocationList", false);
        assert_eq!(
            said,
            "the TLS certificate was refused: the revocation list it was checked against has \
             expired"
        );
        let said = described("invalid peer certificate: Expired", false);
        assert_eq!(said, "the TLS certificate was refused: it has expired");
    }

    #[tokio::test]
    async fn a_refused_connection_and_a_silent_server_are_told_apart() {
        let http = crate::integrations::HttpClients::build(true)
            .expect("clients")
            .known_hosts;
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let url = format!(
            "http://{}/hook?token=secret",
            closed.local_addr().expect("addr")
        );
        drop(closed);
        let refused = http.get(&url).send().await.expect_err("refused");
        assert_eq!(describe(refused), "could not connect: connection refused");

        let silent = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let url = format!(
            "http://{}/hook?token=secret",
            silent.local_addr().expect("addr")
        );
        let request = http
            .get(&url)
            .timeout(std::time::Duration::from_millis(200));
        let (answer, _held) = tokio::join!(request.send(), silent.accept());
        let timed_out = describe(answer.expect_err("no answer"));
        assert_eq!(timed_out, "no answer in time (timed out)");
    }
}

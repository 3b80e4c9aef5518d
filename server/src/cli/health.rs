//! `porch health`: a probe for Docker's `HEALTHCHECK`. The runtime image has no curl, and a
//! dozen lines of plain HTTP/1.1 over a loopback socket are smaller and safer than installing it
//! (and its libraries) into every image.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;

use super::write_out;

/// Most bytes read of the answer; the status line is all that matters.
const MAX_ANSWER: u64 = 4096;

#[derive(Debug, Args)]
pub struct HealthArgs {
    /// The address the server listens on (the same variable as `porch serve`); an unspecified
    /// address such as 0.0.0.0 is probed on loopback.
    #[arg(long, env = "PORCH_LISTEN", default_value = "127.0.0.1:8080", value_parser = crate::config::parse_listen)]
    listen: SocketAddr,
    /// The path to probe: `/healthz` (the process serves HTTP) or `/readyz` (it takes traffic).
    #[arg(long, default_value = "/healthz", value_parser = ["/healthz", "/readyz"])]
    path: String,
    /// Give up after this long (more than zero).
    #[arg(long, default_value = "3s", value_parser = positive_duration)]
    timeout: Duration,
}

/// A duration over zero: a socket timeout of zero is no timeout at all to the OS, so the
/// standard library refuses it, and the probe would fail with its words instead of a usage error.
fn positive_duration(raw: &str) -> Result<Duration, String> {
    match humantime::parse_duration(raw) {
        Ok(duration) if duration.is_zero() => Err("must be more than zero, such as 3s".to_owned()),
        Ok(duration) => Ok(duration),
        Err(err) => Err(err.to_string()),
    }
}

/// Probes the server; succeeds only on a 200 answer.
pub fn run(args: &HealthArgs) -> anyhow::Result<()> {
    let target = probe_address(args.listen);
    let (status, answer) = get(target, &args.path, args.timeout, MAX_ANSWER)
        .with_context(|| format!("probing http://{target}{}", args.path))?;
    if status != 200 {
        // Readiness says why it is not ready (`shutting_down`, `disk_full`, …): say it too.
        let reason = answer
            .split_once("\r\n\r\n")
            .and_then(|(_, body)| serde_json::from_str::<serde_json::Value>(body).ok())
            .and_then(|body| body["reason"].as_str().map(|reason| format!(" ({reason})")))
            .unwrap_or_default();
        bail!("http://{target}{} answered {status}{reason}", args.path);
    }
    write_out(&format!("http://{target}{} answered 200", args.path))
}

fn probe_address(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// One plain-HTTP GET of `path`; the answer's status code.
pub(crate) fn probe(target: SocketAddr, path: &str, timeout: Duration) -> anyhow::Result<u16> {
    get(target, path, timeout, MAX_ANSWER).map(|(status, _)| status)
}

/// One plain-HTTP GET of `path`: the status code and the answer's first `max_bytes` bytes,
/// head included (the body is whole when the server sends it with a length, as Porch does).
pub(crate) fn get(
    target: SocketAddr,
    path: &str,
    timeout: Duration,
    max_bytes: u64,
) -> anyhow::Result<(u16, String)> {
    let in_time = |err| said_in_time(err, timeout);
    let mut stream = TcpStream::connect_timeout(&target, timeout).map_err(in_time)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\nUser-Agent: porch-health\r\n\r\n"
    )
    .map_err(in_time)?;
    let mut answer = Vec::new();
    stream
        .take(max_bytes)
        .read_to_end(&mut answer)
        .map_err(in_time)?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .lines()
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .context("the answer has no HTTP status line")?;
    Ok((status, answer))
}

/// A socket timeout in words: the OS reports one as "Resource temporarily unavailable" (a read
/// or write) or "timed out" (a connect), which says nothing of the probe's limit.
fn said_in_time(err: std::io::Error, timeout: Duration) -> anyhow::Error {
    match err.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            anyhow::anyhow!("no answer within {}", humantime::format_duration(timeout))
        }
        _ => err.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_never_answers_is_said_so_with_the_limit() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let target = listener.local_addr().expect("addr");
        let err = probe(target, "/healthz", Duration::from_millis(200)).expect_err("silent");
        assert_eq!(err.to_string(), "no answer within 200ms");
        drop(listener);
    }

    /// A server that is not ready says why, and the probe says it too.
    #[test]
    fn a_refusal_names_the_readiness_reason() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let target = listener.local_addr().expect("addr");
        let server = std::thread::spawn(move || {
            let (mut socket, _) = listener.accept().expect("accept");
            // The whole request head first: closing with part of it unread would reset the
            // connection, and the probe would lose the answer.
            let mut head = Vec::new();
            let mut byte = [0_u8; 1];
            while !head.ends_with(b"\r\n\r\n") && socket.read(&mut byte).expect("read") == 1 {
                head.push(byte[0]);
            }
            let body = r#"{"status":"not_ready","reason":"shutting_down"}"#;
            write!(
                socket,
                "HTTP/1.1 503 Service Unavailable\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .expect("write");
        });
        let args = HealthArgs {
            listen: target,
            path: "/readyz".to_owned(),
            timeout: Duration::from_secs(5),
        };
        let err = run(&args).expect_err("not ready");
        assert_eq!(
            err.to_string(),
            format!("http://{target}/readyz answered 503 (shutting_down)")
        );
        server.join().expect("server");
    }

    #[test]
    fn a_zero_timeout_is_a_usage_error() {
        assert_eq!(positive_duration("2s"), Ok(Duration::from_secs(2)));
        assert!(positive_duration("0s").is_err_and(|why| why.contains("more than zero")));
        assert!(positive_duration("soon").is_err());
    }

    #[test]
    fn an_unspecified_listen_address_is_probed_on_loopback() {
        let any: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        assert_eq!(probe_address(any), "127.0.0.1:8080".parse().expect("addr"));
        let any6: SocketAddr = "[::]:9000".parse().expect("addr");
        assert_eq!(probe_address(any6), "[::1]:9000".parse().expect("addr"));
    }
}

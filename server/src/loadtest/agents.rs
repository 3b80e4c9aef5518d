//! Agents with the live inbox open during a stair: each holds `GET /inbox/events` (Server-Sent
//! Events) and notes when each event arrives. An event's id is the newest message it covers, so
//! a message has reached an agent once an event with an id at least as high has arrived; fan-out
//! latency runs from the message's intended send time to then.

use anyhow::Context;
use hdrhistogram::Histogram;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout, timeout_at};

use crate::accounts::SESSION_COOKIE;

use crate::metrics::loadtest_report::AgentStair;

/// What one agent's stream delivered: (event id, arrival), in arrival order.
pub type Events = Vec<(i64, Instant)>;

/// Opens an agent's inbox stream at `addr` (`host:port`), waits until it is streaming, and
/// returns the task that records events until `deadline`.
pub async fn watch(
    addr: &str,
    session: &str,
    deadline: Instant,
) -> anyhow::Result<tokio::task::JoinHandle<Events>> {
    let mut stream = timeout(std::time::Duration::from_secs(10), TcpStream::connect(addr))
        .await
        .context("connecting an agent took over 10 s")?
        .context("connecting an agent")?;
    // HTTP/1.0: the body then simply runs until the server closes, with no chunked framing to
    // undo before reading the events.
    let request = format!(
        "GET /inbox/events HTTP/1.0\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Cookie: {SESSION_COOKIE}={session}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut buf = Vec::with_capacity(8192);
    let body_start = loop {
        let mut chunk = [0u8; 4096];
        let n = timeout(std::time::Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .context("no answer to the agent's request within 10 s")??;
        anyhow::ensure!(n > 0, "the server closed the agent's stream");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]);
            anyhow::ensure!(
                head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200"),
                "the inbox stream was refused: {}",
                head.lines().next().unwrap_or_default()
            );
            break end + 4;
        }
    };
    buf.drain(..body_start);
    Ok(tokio::task::spawn_local(record(stream, buf, deadline)))
}

/// Reads events until `deadline` or the end of the stream.
async fn record(mut stream: TcpStream, mut pending: Vec<u8>, deadline: Instant) -> Events {
    let mut events = Events::new();
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        // Complete lines only; a partial one waits for the next read.
        while let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if let Some(id) = line
                .strip_prefix(b"id:")
                .and_then(|rest| std::str::from_utf8(rest).ok())
                .and_then(|rest| rest.trim().parse::<i64>().ok())
            {
                events.push((id, Instant::now()));
            }
        }
        match timeout_at(deadline, stream.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => pending.extend_from_slice(&chunk[..n]),
            _ => return events,
        }
    }
}

/// Fan-out over every agent: for each message acked in the window (`(id, intended)`), the first
/// event of each agent that covers it.
#[allow(clippy::cast_precision_loss)]
pub fn fan_out(agents: &[Events], messages: &[(i64, Instant)]) -> anyhow::Result<AgentStair> {
    let mut latency = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)?;
    let mut delivered = 0u64;
    for events in agents {
        // The highest id seen by each arrival: what the agent knew of at that moment.
        let mut covered = Vec::with_capacity(events.len());
        let mut highest = i64::MIN;
        for (id, at) in events {
            highest = highest.max(*id);
            covered.push((highest, *at));
        }
        for (id, intended) in messages {
            let first = covered.partition_point(|(high, _)| high < id);
            if let Some((_, at)) = covered.get(first) {
                delivered += 1;
                let us = u64::try_from(at.saturating_duration_since(*intended).as_micros())
                    .unwrap_or(u64::MAX);
                latency.saturating_record(us.max(1));
            }
        }
    }
    let ms = |q: f64| latency.value_at_quantile(q) as f64 / 1000.0;
    Ok(AgentStair {
        agents: u32::try_from(agents.len()).unwrap_or(u32::MAX),
        expected: messages.len() as u64 * agents.len() as u64,
        delivered,
        fan_out_p50_ms: ms(0.5),
        fan_out_p99_ms: ms(0.99),
        fan_out_max_ms: latency.max() as f64 / 1000.0,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_message_reaches_an_agent_with_the_first_event_that_covers_it() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        // Ids 1 and 2 arrive together in event 2; id 3 never arrives.
        let agent = vec![(2, at(12)), (1, at(15))];
        let messages = [(1, at(0)), (2, at(5)), (3, at(6))];
        let stair = fan_out(&[agent], &messages).expect("fan-out");
        assert_eq!((stair.expected, stair.delivered), (3, 2));
        assert!(
            (stair.fan_out_max_ms - 12.0).abs() < 0.1,
            "{}",
            stair.fan_out_max_ms
        );
        assert!(
            (stair.fan_out_p50_ms - 7.0).abs() < 0.1,
            "{}",
            stair.fan_out_p50_ms
        );
    }
}

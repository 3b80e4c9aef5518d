//! Socket Mode, for boxes without a public URL: Porch opens a websocket to Slack
//! (`apps.connections.open` with the app-level token) and receives the same events as the
//! Events API. Each event envelope is acknowledged only after its event is committed; slash
//! commands and shortcuts are acknowledged at once and done after. A `disconnect`, a dead socket
//! or silence reconnects with backoff.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::http::header::USER_AGENT;
use tokio_util::sync::CancellationToken;

use crate::integrations::clients;
use crate::store::{self, IntegrationId};

use super::inbound::{Handled, handle_event_callback};
use super::{
    Request, SlackInbound, SlackIntegration, handle_request, parse_command, parse_interaction,
    refused_submission,
};

/// How often the set of Socket Mode integrations is compared with the running clients.
const RESCAN: Duration = Duration::from_secs(30);
/// Ping interval, and the silence after which the socket counts as dead (half-open sockets
/// otherwise stop delivering without an error).
const PING_EVERY: Duration = Duration::from_secs(30);
const SILENCE_LIMIT: Duration = Duration::from_secs(90);
/// Reconnect backoff bounds.
const BACKOFF_MIN: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_mins(1);

/// Keeps one Socket Mode client running per enabled Slack integration with an app token.
pub fn spawn_socket_mode(slack: Arc<SlackInbound>, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut clients: HashMap<IntegrationId, (String, JoinHandle<()>)> = HashMap::new();
        let mut rescan = tokio::time::interval(RESCAN);
        loop {
            tokio::select! {
                _ = rescan.tick() => {}
                () = slack.rescan.notified() => {}
                () = shutdown.cancelled() => break,
            }
            let rows = match slack
                .readers
                .read(|c| store::list_enabled_integrations(c, "slack"))
                .await
            {
                Ok(rows) => rows,
                Err(err) => {
                    tracing::warn!(error = %err, "could not list Slack integrations");
                    continue;
                }
            };
            let wanted: HashMap<IntegrationId, SlackIntegration> = rows
                .into_iter()
                .filter_map(|r| Some((r.id, SlackIntegration::open(&slack.secret_key, &r)?)))
                .filter(|(_, s)| s.secrets.app_token.is_some())
                .collect();
            clients.retain(|id, (token, task)| {
                let keep = wanted.get(id).and_then(|s| s.secrets.app_token.as_ref()) == Some(token)
                    && !task.is_finished();
                if !keep {
                    task.abort();
                }
                keep
            });
            for (id, integration) in wanted {
                if clients.contains_key(&id) {
                    continue;
                }
                let token = integration.secrets.app_token.clone().unwrap_or_default();
                let task = tokio::spawn(run_client(
                    Arc::clone(&slack),
                    shutdown.clone(),
                    id,
                    integration,
                ));
                clients.insert(id, (token, task));
            }
        }
        for (_, (_, task)) in clients {
            task.abort();
        }
    })
}

/// Connects, serves and reconnects until shutdown.
async fn run_client(
    inbound: Arc<SlackInbound>,
    shutdown: CancellationToken,
    id: IntegrationId,
    slack: SlackIntegration,
) {
    let mut backoff = BACKOFF_MIN;
    while !shutdown.is_cancelled() {
        match serve_connection(&inbound, &shutdown, id, &slack).await {
            Ok(()) => backoff = BACKOFF_MIN,
            Err(err) => {
                tracing::warn!(integration = %id, error = %err, "Slack Socket Mode connection failed");
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff.mul_f64(1.0 + rand::random::<f64>() * 0.2)) => {}
            () = shutdown.cancelled() => return,
        }
    }
}

/// One websocket session: returns when Slack asks to reconnect, the socket dies, or shutdown.
async fn serve_connection(
    inbound: &Arc<SlackInbound>,
    shutdown: &CancellationToken,
    id: IntegrationId,
    slack: &SlackIntegration,
) -> Result<(), String> {
    let app_token = slack.secrets.app_token.as_deref().unwrap_or_default();
    let url = inbound
        .api
        .open_connection(app_token)
        .await
        .map_err(|e| e.to_string())?;
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| e.to_string())?;
    request
        .headers_mut()
        .insert(USER_AGENT, HeaderValue::from_static(clients::USER_AGENT));
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .map_err(|e| e.to_string())?;
    tracing::info!(integration = %id, "Slack Socket Mode connected");
    let mut ping = tokio::time::interval(PING_EVERY);
    let silence = tokio::time::sleep(SILENCE_LIMIT);
    tokio::pin!(silence);
    loop {
        let frame = tokio::select! {
            frame = socket.next() => frame,
            _ = ping.tick() => {
                socket.send(Message::Ping(Vec::new().into())).await.map_err(|e| e.to_string())?;
                continue;
            }
            () = &mut silence => return Err("no frame from Slack for 90 s".into()),
            () = shutdown.cancelled() => {
                let _ = socket.close(None).await;
                return Ok(());
            }
        };
        silence
            .as_mut()
            .reset(tokio::time::Instant::now() + SILENCE_LIMIT);
        let text = match frame {
            Some(Ok(Message::Text(text))) => text,
            Some(Ok(Message::Close(_))) | None => return Ok(()),
            Some(Ok(_)) => continue,
            Some(Err(err)) => return Err(err.to_string()),
        };
        let Ok(envelope) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        match envelope["type"].as_str() {
            Some("disconnect") => return Ok(()),
            Some(kind @ ("slash_commands" | "interactive")) => {
                let Some(envelope_id) = envelope["envelope_id"].as_str() else {
                    continue;
                };
                // Acknowledged first (Slack wants it within 3 s), done after, in its own task.
                let (ack, request) = acknowledge(kind, envelope_id, slack, &envelope["payload"]);
                socket
                    .send(Message::Text(ack.to_string().into()))
                    .await
                    .map_err(|e| e.to_string())?;
                if let Some(request) = request {
                    tokio::spawn(handle_request(
                        Arc::clone(inbound),
                        id,
                        slack.clone(),
                        request,
                    ));
                }
            }
            Some("events_api") => {
                let Some(envelope_id) = envelope["envelope_id"].as_str() else {
                    continue;
                };
                // Acknowledge only what is committed; without an ack Slack sends it again.
                match handle_event_callback(inbound, id, slack, &envelope["payload"]).await {
                    // Left unacknowledged: Slack sends it again.
                    Ok(Handled::Later) => {}
                    Ok(_) => {
                        let ack = json!({"envelope_id": envelope_id}).to_string();
                        socket
                            .send(Message::Text(ack.into()))
                            .await
                            .map_err(|e| e.to_string())?;
                    }
                    Err(err) => {
                        tracing::warn!(integration = %id, error = %err, "Slack event not stored; Slack will resend it");
                    }
                }
            }
            _ => {}
        }
    }
}

/// The acknowledgement of a slash command or an interaction, and the request to do after it.
/// The answer is an ephemeral message, not the acknowledgement, except for a note that cannot be
/// stored: it is refused in the acknowledgement, its modal stays open, and nothing is done.
fn acknowledge(
    kind: &str,
    envelope_id: &str,
    slack: &SlackIntegration,
    payload: &Value,
) -> (Value, Option<Request>) {
    if let Some(refusal) = refused_submission(payload, &slack.config.team_id) {
        return (
            json!({"envelope_id": envelope_id, "payload": refusal}),
            None,
        );
    }
    let request = if kind == "slash_commands" {
        parse_command(payload)
    } else {
        parse_interaction(payload)
    };
    (json!({"envelope_id": envelope_id}), request)
}

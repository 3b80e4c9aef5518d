//! A site's outgoing webhook endpoints (admins only): list and add (checked by the same
//! `check_webhook` as the API: known events, the SSRF guard), change, rotate the signing secret,
//! read the delivery log and replay a delivery from it.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::layout::{Notice, Section};
use porch_app::webhooks::{
    DeliveryAttemptView, EndpointItemView, WebhookPageView, WebhooksPageView, render_webhook,
    render_webhooks,
};
use serde::Deserialize;

use crate::audit::Actor;
use crate::clock::now_ms;
use crate::http::ClientIp;
use crate::integrations::webhook::{
    WebhookConfig, WebhookSecrets, WebhookSetup, check_webhook, new_secret,
};
use crate::integrations::{
    CheckedSettings, EndpointChange, Health, SetupError, Sole, add_webhook_endpoint,
    fix_webhook_endpoint, open_secrets_as, rotate_webhook_secret, settings_json,
};
use crate::jobs::{WebhookEvent, plan_webhook_replay};
use crate::state::AppState;
use crate::store::{self, IntegrationRow, JobId, SiteRow};

use super::auth::{NoFields, NoticeQuery};
use super::checkbox::Checkbox;
use super::destinations::{find_site_integration, health_view, load_health};
use super::page::{PageError, html, html_with_status, see_other};
use super::session::{Admin, AdminPosted, SignedIn};
use super::sites::find_site;

/// Attempts shown in a delivery log at once.
const LOG_LIMIT: u32 = 200;

fn all_events() -> Vec<String> {
    WebhookEvent::ALL
        .iter()
        .map(|e| e.as_str().to_owned())
        .collect()
}

fn config_of(row: &IntegrationRow) -> WebhookConfig {
    serde_json::from_str(&row.config).unwrap_or(WebhookConfig {
        url: String::new(),
        events: Vec::new(),
    })
}

async fn list_page(
    app: &AppState,
    who: &SignedIn,
    site: &SiteRow,
    typed: WebhookSetup,
    notice: Option<Notice>,
) -> Result<String, PageError> {
    let id = site.id;
    let rows = app
        .readers
        .read(move |c| {
            let rows = store::list_site_integrations(c, id)?;
            rows.into_iter()
                .filter(|row| row.kind == "webhook")
                .map(|row| {
                    let health = Health::read(c, &row)?;
                    Ok((row, health))
                })
                .collect::<Result<Vec<_>, store::Error>>()
        })
        .await?;
    let endpoints = rows
        .into_iter()
        .map(|(row, health)| {
            let config = config_of(&row);
            EndpointItemView {
                id: row.id.0,
                url: config.url,
                events: config.events,
                health: health_view(health),
            }
        })
        .collect();
    Ok(render_webhooks(WebhooksPageView {
        nav: who.nav(Section::Sites),
        site_key: site.key.clone(),
        site_name: site.settings.name.clone(),
        endpoints,
        all_events: all_events(),
        url: typed.url,
        events: typed.events,
        notice,
    }))
}

/// `GET /sites/{key}/webhooks`.
pub async fn webhooks_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    // A new endpoint starts with every event ticked: what most receivers want, and untick is
    // one click, where an empty choice was refused after the whole form was filled in.
    let fresh = WebhookSetup {
        url: String::new(),
        events: all_events(),
    };
    Ok(html(
        list_page(&app, &who, &site, fresh, query.notice()).await?,
    ))
}

/// The endpoint form: the URL and one checkbox per event (named after it). A box sent with any
/// value but `on` refuses the form (400), as every admin checkbox does.
#[derive(Debug, Deserialize)]
#[serde(try_from = "EndpointFields")]
pub struct EndpointForm(WebhookSetup);

/// The endpoint form's fields as posted: the URL, the ticked events, and the `csrf` field.
#[derive(Debug, Deserialize)]
struct EndpointFields {
    #[serde(default)]
    url: String,
    #[serde(flatten)]
    fields: HashMap<String, String>,
}

impl TryFrom<EndpointFields> for EndpointForm {
    type Error = String;

    fn try_from(form: EndpointFields) -> Result<Self, String> {
        let mut events = Vec::new();
        for event in WebhookEvent::ALL.iter().map(|e| e.as_str()) {
            if let Some(value) = form.fields.get(event) {
                Checkbox::ticked(value)?;
                events.push(event.to_owned());
            }
        }
        Ok(Self(WebhookSetup {
            url: form.url,
            events,
        }))
    }
}

/// `POST /sites/{key}/webhooks`: adds an endpoint and answers with its page showing the signing
/// secret once (an answer, not a redirect: the secret is shown nowhere else).
pub async fn add_webhook(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<EndpointForm>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    // Shown again with a refusal, so nothing typed or ticked is lost.
    let typed = form.0;
    let secrets = WebhookSecrets {
        secret: new_secret(),
        previous: None,
        previous_until: None,
    };
    let added = async {
        let config = check_webhook(typed.clone(), app.config.allow_private_networks).await?;
        let settings = CheckedSettings {
            kind: "webhook",
            name: "Webhook",
            config: settings_json(&config),
            secrets: settings_json(&secrets),
        };
        let actor = Actor::user(&who.user, ip);
        let handles = (&*app.writer, &app.secret_key);
        let url = config.url.clone();
        Ok::<_, SetupError>(add_webhook_endpoint(handles, &actor, site.id, settings, url).await?)
    }
    .await;
    match added {
        Ok(Sole::Exists(row)) => {
            // A reload of this form's answer posts it again: say so, and make nothing new.
            let notice = Some(Notice::Invalid {
                field: "url",
                text: format!(
                    "This site already has an endpoint for this URL (endpoint {}). Its signing \
                     secret is shown only when it is added; rotate it on the endpoint's page if \
                     it was lost.",
                    row.id.0
                ),
            });
            let body = list_page(&app, &who, &site, typed, notice).await?;
            Ok(html_with_status(StatusCode::CONFLICT, body))
        }
        Ok(Sole::Added(id)) => {
            let (_, row) = find_site_integration(&app, &key, id.0, Some("webhook")).await?;
            let notice = Some(Notice::Success("Endpoint added.".to_owned()));
            let body =
                endpoint_page(&app, &who, (&site, &row), Some(secrets.secret), notice).await?;
            Ok(html(body))
        }
        Err(SetupError::Store(err)) => Err(err.into()),
        // The URL's refusal is the URL field's; the events' (none chosen) is the form's.
        Err(err @ SetupError::Refused { .. }) => {
            let text = err.to_string();
            let notice = Some(Notice::Invalid { field: "url", text });
            let body = list_page(&app, &who, &site, typed, notice).await?;
            Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body))
        }
        Err(err) => {
            let notice = Some(Notice::Error(err.to_string()));
            let body = list_page(&app, &who, &site, typed, notice).await?;
            Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body))
        }
    }
}

async fn endpoint_page(
    app: &AppState,
    who: &SignedIn,
    (site, row): (&SiteRow, &IntegrationRow),
    new_secret: Option<String>,
    notice: Option<Notice>,
) -> Result<String, PageError> {
    let id = row.id;
    let log = app
        .readers
        .read(move |c| store::list_delivery_log(c, id, LOG_LIMIT))
        .await?;
    let config = config_of(row);
    let previous_valid_until = open_secrets_as::<WebhookSecrets>(&app.secret_key, row)
        .and_then(|s| s.previous_until)
        .filter(|until| *until > now_ms());
    Ok(render_webhook(WebhookPageView {
        nav: who.nav(Section::Sites),
        site_key: site.key.clone(),
        site_name: site.settings.name.clone(),
        id: row.id.0,
        url: config.url,
        events: config.events,
        all_events: all_events(),
        is_enabled: row.is_enabled,
        health: load_health(app, row).await?,
        new_secret,
        previous_valid_until,
        log: log
            .into_iter()
            .map(|a| DeliveryAttemptView {
                job_id: a.job_id.0,
                event: a.event.unwrap_or_default(),
                job_state: a.job_state,
                attempt: a.attempt,
                started_at: a.started_at,
                outcome: a.outcome,
                http_status: a.http_status,
                error: a.error,
            })
            .collect(),
        notice,
    }))
}

/// `GET /sites/{key}/webhooks/{id}`.
pub async fn webhook_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path((key, id)): Path<(String, i64)>,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let (site, row) = find_site_integration(&app, &key, id, Some("webhook")).await?;
    Ok(html(
        endpoint_page(&app, &who, (&site, &row), None, query.notice()).await?,
    ))
}

/// `POST /sites/{key}/webhooks/{id}`: saves the URL and events (turns a disabled endpoint back
/// on; blocked deliveries resume).
pub async fn save_webhook(
    State(app): State<AppState>,
    Path((key, id)): Path<(String, i64)>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<EndpointForm>,
) -> Result<Response, PageError> {
    let (site, row) = find_site_integration(&app, &key, id, Some("webhook")).await?;
    let saved = async {
        let config = check_webhook(form.0, app.config.allow_private_networks).await?;
        let actor = Actor::user(&who.user, ip);
        let url = config.url.clone();
        let handles = (&app.writer, &app.jobs);
        Ok::<_, SetupError>(
            fix_webhook_endpoint(handles, &actor, &row, settings_json(&config), url).await?,
        )
    }
    .await;
    match saved {
        Ok(EndpointChange::Saved(_)) => Ok(see_other(&format!(
            "/sites/{key}/webhooks/{id}?notice=webhook-saved"
        ))),
        Ok(EndpointChange::UrlTaken(other)) => {
            let notice = Some(Notice::Error(format!(
                "Endpoint {} already posts to this URL: with both, the receiver would get every \
                 event twice. Change or delete that one instead.",
                other.id.0
            )));
            let body = endpoint_page(&app, &who, (&site, &row), None, notice).await?;
            Ok(html_with_status(StatusCode::CONFLICT, body))
        }
        Err(SetupError::Store(err)) => Err(err.into()),
        Err(err) => {
            let notice = Some(Notice::Error(err.to_string()));
            let body = endpoint_page(&app, &who, (&site, &row), None, notice).await?;
            Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, body))
        }
    }
}

/// `POST /sites/{key}/webhooks/{id}/rotate`: a new signing secret, shown once in the answer.
pub async fn rotate_webhook(
    State(app): State<AppState>,
    Path((key, id)): Path<(String, i64)>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let (site, row) = find_site_integration(&app, &key, id, Some("webhook")).await?;
    let (secret, notice) = match rotate_webhook_secret(
        (&app.writer, &app.jobs, &app.secret_key),
        &Actor::user(&who.user, ip),
        &row,
    )
    .await
    {
        Ok(rotated) => (
            Some(rotated.secret),
            Notice::Success("Secret rotated.".to_owned()),
        ),
        Err(SetupError::Store(err)) => return Err(err.into()),
        Err(err) => (None, Notice::Error(err.to_string())),
    };
    let (_, row) = find_site_integration(&app, &key, id, Some("webhook")).await?;
    let body = endpoint_page(&app, &who, (&site, &row), secret, Some(notice)).await?;
    Ok(html(body))
}

/// `POST /sites/{key}/webhooks/{id}/deliveries/{job}/replay`: sends a finished delivery again
/// (same `webhook-id`, fresh timestamp and signature) as a new job.
pub async fn replay_webhook_delivery(
    State(app): State<AppState>,
    Path((key, id, job)): Path<(String, i64, i64)>,
    _admin: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let (_, row) = find_site_integration(&app, &key, id, Some("webhook")).await?;
    let integration = row.id;
    let replay = app
        .writer
        .write(move |c| plan_webhook_replay(c, integration, JobId(job), now_ms()))
        .await?
        .ok_or_else(|| PageError::not_found("finished delivery"))?;
    app.jobs.submit(vec![replay]);
    Ok(see_other(&format!(
        "/sites/{key}/webhooks/{id}?notice=replayed"
    )))
}

//! A site's Slack page (admins only): status, connecting, fixing, and checking the token.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::destination::HealthView;
use porch_app::integrations::{SlackPageView, SlackStatusView, render_slack};
use porch_app::layout::{Notice, Section};

use crate::audit::Actor;
use crate::http::ClientIp;
use crate::integrations::SetupError;
use crate::integrations::slack::{SlackIntegration, SlackSetup, connect_slack, update_slack};
use crate::state::AppState;
use crate::store::{self, IntegrationRow, SiteRow};

use super::auth::{NoFields, NoticeQuery};
use super::destinations::load_health;
use super::page::{PageError, html, html_with_status, see_other};
use super::session::{Admin, AdminPosted, SignedIn};

async fn load(app: &AppState, key: &str) -> Result<(SiteRow, Option<IntegrationRow>), PageError> {
    let owned = key.to_owned();
    let found = app
        .readers
        .read(move |c| {
            let Some(site) = store::find_site_by_key(c, &owned)? else {
                return Ok(None);
            };
            let slack = store::find_site_integration(c, site.id, "slack")?;
            Ok(Some((site, slack)))
        })
        .await?;
    found.ok_or_else(|| PageError::not_found("site"))
}

fn status(app: &AppState, row: &IntegrationRow, health: HealthView) -> Option<SlackStatusView> {
    let slack = SlackIntegration::open(&app.secret_key, row)?;
    let mode = match (
        slack.secrets.app_token.is_some(),
        slack.secrets.signing_secret.is_some(),
    ) {
        (true, true) => "Socket Mode and the Events API",
        (true, false) => "Socket Mode",
        _ => "the Events API",
    };
    Some(SlackStatusView {
        id: row.id.0,
        team_id: slack.config.team_id,
        channel_id: slack.config.channel_id,
        mode: mode.to_owned(),
        events_url: format!("{}/integrations/slack/{}/events", app.public_url, row.id),
        commands_url: format!("{}/integrations/slack/{}/commands", app.public_url, row.id),
        interactive_url: format!(
            "{}/integrations/slack/{}/interactive",
            app.public_url, row.id
        ),
        health,
        is_enabled: row.is_enabled,
        has_signing_secret: slack.secrets.signing_secret.is_some(),
        has_app_token: slack.secrets.app_token.is_some(),
    })
}

/// The Slack page; `typed_channel`: a refused form's channel id, shown again as typed.
async fn page(
    app: &AppState,
    who: &SignedIn,
    (site, slack): (&SiteRow, Option<&IntegrationRow>),
    notice: Option<Notice>,
    typed_channel: Option<String>,
) -> Result<String, PageError> {
    let status = match slack {
        Some(row) => status(app, row, load_health(app, row).await?),
        None => None,
    };
    Ok(render_slack(SlackPageView {
        nav: who.nav(Section::Sites),
        site_key: site.key.clone(),
        site_name: site.settings.name.clone(),
        status,
        typed_channel,
        notice,
    }))
}

/// `GET /sites/{key}/slack`.
pub async fn slack_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let (site, slack) = load(&app, &key).await?;
    Ok(html(
        page(&app, &who, (&site, slack.as_ref()), query.notice(), None).await?,
    ))
}

/// `POST /sites/{key}/slack`: connects, or saves fixed settings (blocked deliveries resume).
pub async fn save_slack(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<SlackSetup>,
) -> Result<Response, PageError> {
    let (site, slack) = load(&app, &key).await?;
    let actor = Actor::user(&who.user, ip);
    let typed_channel = form.channel_id.clone();
    let outcome = match &slack {
        Some(existing) => update_slack(&app.slack, &actor, existing, form)
            .await
            .map(|_| "slack-saved"),
        None => connect_slack(&app.slack, &actor, site.id, form)
            .await
            .map(|_| "slack-connected"),
    };
    match outcome {
        Ok(notice) => Ok(see_other(&format!("/sites/{key}/slack?notice={notice}"))),
        Err(SetupError::Store(err)) => Err(err.into()),
        Err(err) => {
            // As the API answers: a channel another integration posts to is a conflict.
            let status = match err {
                SetupError::Taken(_) => StatusCode::CONFLICT,
                _ => StatusCode::UNPROCESSABLE_ENTITY,
            };
            let notice = Some(Notice::Error(err.to_string()));
            let shown = (&site, slack.as_ref());
            let body = page(&app, &who, shown, notice, Some(typed_channel)).await?;
            Ok(html_with_status(status, body))
        }
    }
}

/// `POST /sites/{key}/slack/check`: asks Slack whether the stored bot token still works.
pub async fn check_slack(
    State(app): State<AppState>,
    Path(key): Path<String>,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let (site, slack) = load(&app, &key).await?;
    let parsed = slack
        .as_ref()
        .and_then(|row| SlackIntegration::open(&app.secret_key, row));
    let Some(parsed) = parsed else {
        return Ok(see_other(&format!("/sites/{key}/slack")));
    };
    match app.slack.api.auth_test(&parsed.secrets.bot_token).await {
        Ok(_) => Ok(see_other(&format!("/sites/{key}/slack?notice=slack-ok"))),
        Err(err) => {
            let notice = Some(Notice::Error(format!(
                "Slack did not accept the bot token: {err}"
            )));
            Ok(html(
                page(&app, &who, (&site, slack.as_ref()), notice, None).await?,
            ))
        }
    }
}

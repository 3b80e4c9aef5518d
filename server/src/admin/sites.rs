//! Sites (admins only): list, create, edit (look, origins, brakes), the embed snippet, and
//! deleting after a confirmation step. Edits drop the widget's cached copy of the site.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::layout::{Notice, Section};
use porch_app::sites::{
    DeleteSiteView, RefusedOriginView, SiteFormValues, SiteFormView, SiteSummaryView, SitesView,
    SnippetView, render_delete_site, render_site_form, render_sites,
};
use serde::Deserialize;

use crate::audit::Actor;
use crate::chat::{self, RefusedSettings, SiteSettingsInput};
use crate::http::ClientIp;
use crate::state::AppState;
use crate::store::{self, SiteRow};
use crate::values::WIDGET_LOCALES;
use crate::widget::snippet;

use super::auth::NoticeQuery;
use super::page::{PageError, html, html_with_status, see_other};
use super::session::{Admin, AdminPosted, SignedIn};

/// The edit form: the site's settings and, beside them, its attachment limit (a column of its
/// own, also set over the API).
#[derive(Debug, Deserialize)]
pub struct SiteForm {
    #[serde(flatten)]
    settings: SiteSettingsInput,
    /// Megabytes; see [`chat::parse_attachment_megabytes`]. Left out (a client that predates
    /// the field), the limit stays as it is.
    #[serde(default)]
    attachment_max_mb: String,
}

/// The refused settings as a notice about the field they are in, so the form marks that field;
/// about the form when no typed field holds the mistake.
fn refused_notice(refused: RefusedSettings) -> Notice {
    let text = refused.reason.0.into_owned();
    match refused.field {
        Some(field) => Notice::Invalid { field, text },
        None => Notice::Error(text),
    }
}

fn values(input: SiteSettingsInput, attachment_max_mb: String) -> SiteFormValues {
    SiteFormValues {
        attachment_max_mb,
        name: input.name,
        origins: input.origins,
        greeting: input.greeting,
        color: input.color,
        position: input.position,
        visitor_messages_per_minute: input.visitor_messages_per_minute,
        visitor_burst: input.visitor_burst,
        flood_messages_per_minute: input.flood_messages_per_minute,
        flood_conversations_per_minute: input.flood_conversations_per_minute,
        retention_days: input.retention_days,
        locale: input.locale,
        greetings: input.greetings,
    }
}

/// The site with this key, or the not-found page (every site page starts here).
pub(super) async fn find_site(app: &AppState, key: &str) -> Result<SiteRow, PageError> {
    let owned = key.to_owned();
    app.readers
        .read(move |c| store::find_site_by_key(c, &owned))
        .await?
        .ok_or_else(|| PageError::not_found("site"))
}

/// `GET /sites`.
pub async fn sites_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let sites = app.readers.read(store::list_sites).await?;
    Ok(html(render_sites(SitesView {
        nav: who.nav(Section::Sites),
        sites: sites
            .into_iter()
            .map(|s| SiteSummaryView {
                refused: refused_origins(&app, &s).len(),
                key: s.key,
                name: s.settings.name,
                origins: s.settings.origins,
                color: s.settings.color,
            })
            .collect(),
        notice: query.notice(),
    })))
}

/// The origins refused the site's chat that it still does not allow (docs/widget.md).
fn refused_origins(app: &AppState, site: &SiteRow) -> Vec<RefusedOriginView> {
    app.sites
        .refused_origins(&chat::Site::from_row(site.clone()))
        .into_iter()
        .map(|r| RefusedOriginView {
            origin: r.origin,
            count: r.count,
            last_ms: r.last_ms,
        })
        .collect()
}

/// What the edit form shows beside the settings: the snippet and the refused origins.
struct EditExtras {
    snippet: SnippetView,
    refused: Vec<RefusedOriginView>,
}

impl EditExtras {
    fn of(app: &AppState, site: &SiteRow) -> Self {
        let local = crate::config::reaches_only_this_machine(&app.public_url);
        Self {
            snippet: SnippetView {
                text: snippet(&app.public_url, &site.key, &site.settings),
                only_here: local.then(|| app.public_url.clone()),
            },
            refused: refused_origins(app, site),
        }
    }
}

/// The create form (`key` `None`, no extras and no attachment limit: a new site has the
/// default) or a site's edit form.
fn form_page(
    who: &SignedIn,
    key: Option<String>,
    (input, attachment_max_mb): (SiteSettingsInput, String),
    extras: Option<EditExtras>,
    notice: Option<Notice>,
) -> String {
    let (snippet, refused) = extras.map_or((None, Vec::new()), |e| (Some(e.snippet), e.refused));
    render_site_form(SiteFormView {
        nav: who.nav(Section::Sites),
        key,
        values: values(input, attachment_max_mb),
        locales: WIDGET_LOCALES,
        snippet,
        refused,
        notice,
    })
}

/// `GET /sites/new`.
pub async fn new_site_page(Admin(who): Admin, Query(query): Query<NoticeQuery>) -> Response {
    html(form_page(
        &who,
        None,
        (SiteSettingsInput::new_site(), String::new()),
        None,
        query.notice(),
    ))
}

/// `POST /sites`.
pub async fn create_site(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<SiteSettingsInput>,
) -> Result<Response, PageError> {
    let settings = match form.parse() {
        Ok(settings) => settings,
        Err(refused) => {
            let notice = refused_notice(refused);
            let page = form_page(&who, None, (form, String::new()), None, Some(notice));
            return Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, page));
        }
    };
    let key = chat::create_site(&app.writer, &Actor::user(&who.user, ip), settings).await?;
    Ok(see_other(&format!("/sites/{key}?notice=site-created")))
}

/// `GET /sites/{key}`: the edit form and the snippet.
pub async fn site_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    let id = site.id;
    let limit = app
        .readers
        .read(move |c| store::find_attachment_limit(c, id))
        .await?;
    Ok(html(form_page(
        &who,
        Some(site.key.clone()),
        (
            SiteSettingsInput::from(&site.settings),
            chat::attachment_megabytes(limit),
        ),
        Some(EditExtras::of(&app, &site)),
        query.notice(),
    )))
}

/// `POST /sites/{key}`. The attachment limit is stored (and audited) only when it changed.
pub async fn update_site(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<SiteForm>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    let parsed = form
        .settings
        .parse()
        .map_err(refused_notice)
        .and_then(|settings| {
            let limit = match form.attachment_max_mb.trim() {
                "" => None,
                raw => Some(chat::parse_attachment_megabytes(raw).map_err(|invalid| {
                    Notice::Invalid {
                        field: "attachment_max_mb",
                        text: invalid.0.into(),
                    }
                })?),
            };
            Ok((settings, limit))
        });
    let (settings, limit) = match parsed {
        Ok(parsed) => parsed,
        Err(notice) => {
            let page = form_page(
                &who,
                Some(key),
                (form.settings, form.attachment_max_mb),
                Some(EditExtras::of(&app, &site)),
                Some(notice),
            );
            return Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, page));
        }
    };
    // The snippet carries the colour, the corner and the widget language: only a change to one
    // of them asks for the snippet to be pasted again.
    let carried = |s: &chat::SiteSettings| (s.color.clone(), s.position.clone(), s.locale.clone());
    let notice = if carried(&settings) == carried(&site.settings) {
        "site-saved"
    } else {
        "site-saved-snippet"
    };
    let actor = Actor::user(&who.user, ip);
    chat::update_site(&app.chat, &app.sites, &actor, &key, settings).await?;
    if let Some(limit) = limit {
        chat::set_attachment_limit((&app.writer, &app.sites), &actor, &site, limit).await?;
    }
    Ok(see_other(&format!("/sites/{key}?notice={notice}")))
}

/// `GET /sites/{key}/delete`: the confirmation step.
pub async fn delete_site_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Path(key): Path<String>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    Ok(html(delete_page(&app, &who, key, site, None).await?))
}

async fn delete_page(
    app: &AppState,
    who: &SignedIn,
    key: String,
    site: SiteRow,
    error: Option<String>,
) -> Result<String, PageError> {
    let owned = key.clone();
    let conversations = app
        .readers
        .read(move |c| store::count_site_conversations(c, &owned))
        .await?;
    Ok(render_delete_site(DeleteSiteView {
        nav: who.nav(Section::Sites),
        key,
        name: site.settings.name,
        conversations,
        error,
    }))
}

#[derive(Debug, Deserialize)]
pub struct DeleteForm {
    #[serde(default)]
    confirm: String,
}

/// `POST /sites/{key}/delete`: only when the typed name matches.
pub async fn delete_site(
    State(app): State<AppState>,
    Path(key): Path<String>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<DeleteForm>,
) -> Result<Response, PageError> {
    let site = find_site(&app, &key).await?;
    if form.confirm.trim() != site.settings.name {
        let why = "The name you typed does not match the site's name, so nothing was deleted. \
                   Type it exactly as shown above.";
        let page = delete_page(&app, &who, key, site, Some(why.to_owned())).await?;
        return Ok(html_with_status(StatusCode::UNPROCESSABLE_ENTITY, page));
    }
    chat::delete_site(&app.chat, &app.sites, &Actor::user(&who.user, ip), &key).await?;
    Ok(see_other("/sites?notice=site-deleted"))
}

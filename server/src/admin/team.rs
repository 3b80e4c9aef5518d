//! The team (admins only): invite (a copyable link, also mailed through the job runner when SMTP
//! is configured), change roles, disable and enable, make password-reset links, reset someone's
//! two-factor sign-in, and require it.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::layout::{Notice, Section};
use porch_app::team::{Joined, MemberView, NewLink, TeamView, render_team};
use serde::Deserialize;

use crate::accounts::{self, DisplayName, EmailAddress, LinkKind};
use crate::audit::Actor;
use crate::http::ClientIp;
use crate::integrations::email::queue_account_link;
use crate::jobs::{AccountLink, AccountLinkArgs};
use crate::state::AppState;
use crate::store::{self, UserId, UserRow};
use crate::values::one_line;

use super::auth::{NoFields, NoticeQuery};
use super::checkbox::Checkbox;
use super::page::{PageError, html_with_status, see_other};
use super::session::{Admin, AdminPosted, SignedIn};

async fn team_page_with(
    app: &AppState,
    who: &SignedIn,
    notice: Option<Notice>,
    new_link: Option<NewLink>,
    status: StatusCode,
) -> Result<Response, PageError> {
    let users = app.accounts.list_users().await?;
    let (with_two_factor, two_factor_required) = app.accounts.team_two_factor().await?;
    let not_joined = app.readers.read(store::list_users_not_joined).await?;
    let now = crate::clock::now_ms();
    let members = users
        .into_iter()
        .map(|u| MemberView {
            id: u.id.0,
            is_me: u.id == who.user.id,
            has_two_factor: with_two_factor.contains(&u.id),
            joined: match not_joined.iter().find(|n| n.id == u.id) {
                None => Joined::Yes,
                Some(n) => match n.link_expires_at {
                    Some(until) if until > now => Joined::Invited { until },
                    _ if n.was_invited => Joined::InvitationExpired,
                    _ => Joined::NotInvited,
                },
            },
            name: u.name,
            email: u.email,
            is_admin: u.role == "admin",
            is_disabled: u.is_disabled,
        })
        .collect();
    Ok(html_with_status(
        status,
        render_team(TeamView {
            nav: who.nav(Section::Team),
            members,
            notice,
            new_link,
            two_factor_required,
        }),
    ))
}

/// `GET /team`.
pub async fn team_page(
    State(app): State<AppState>,
    Admin(who): Admin,
    Query(query): Query<NoticeQuery>,
) -> Result<Response, PageError> {
    team_page_with(&app, &who, query.notice(), None, StatusCode::OK).await
}

#[derive(Debug, Deserialize)]
pub struct InviteForm {
    #[serde(default)]
    email: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
}

/// `POST /team/invite`: creates the user and shows their invitation link once. The page is
/// the answer to the post (not a redirect), because the link exists nowhere else.
/// `GET /team/invite` and `GET /team/{id}/link`: the page a link was shown on stays at the form's
/// address; opened again (a bookmark, a reload that does not post), it is the team page. The link
/// itself is shown once, by the `POST`.
pub async fn back_to_team(_: Admin) -> Response {
    see_other("/team")
}

pub async fn invite(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<InviteForm>,
) -> Result<Response, PageError> {
    let actor = Actor::user(&who.user, ip);
    match app
        .accounts
        .invite_user(&actor, who.user.id, &form.email, &form.name, &form.role)
        .await
    {
        Ok(token) => {
            let url = LinkKind::Invite.url(&app.public_url, &token);
            let mailed = mail_link(
                &app,
                (&who.user, form.name.trim(), form.email.trim()),
                AccountLink::Invitation,
                &url,
            )
            .await?;
            let link = NewLink {
                who: form.name.trim().to_owned(),
                what: "Invitation link".to_owned(),
                mailed,
                url,
                lasts: LinkKind::Invite.lasts(),
            };
            team_page_with(&app, &who, None, Some(link), StatusCode::OK).await
        }
        Err(accounts::Error::Invalid(invalid)) => {
            // Checked in the order `invite_user` checks them; the role is picked, not typed.
            let text = invalid.to_string();
            let notice = Some(if EmailAddress::parse_new(&form.email).is_err() {
                Notice::Invalid {
                    field: "invite-email",
                    text,
                }
            } else if DisplayName::parse(&form.name).is_err() {
                Notice::Invalid {
                    field: "invite-name",
                    text,
                }
            } else {
                Notice::Error(text)
            });
            team_page_with(&app, &who, notice, None, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        // The one conflict of an invitation: the address is someone's already.
        Err(accounts::Error::Conflict(text)) => {
            let notice = Some(Notice::Invalid {
                field: "invite-email",
                text: text.to_owned(),
            });
            team_page_with(&app, &who, notice, None, StatusCode::CONFLICT).await
        }
        Err(err) => Err(err.into()),
    }
}

/// `POST /team/{id}/link`: a fresh invitation link (no password yet) or a reset link.
pub async fn create_link(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    let users = app.accounts.list_users().await?;
    let target = users
        .into_iter()
        .find(|u| u.id == UserId(id))
        .ok_or_else(|| PageError::not_found("user"))?;
    let has_password = app.accounts.has_password(target.id).await?;
    let (kind, what, mail) = if has_password {
        (
            LinkKind::Reset,
            "Password reset link",
            AccountLink::PasswordReset,
        )
    } else {
        (LinkKind::Invite, "Invitation link", AccountLink::Invitation)
    };
    let token = match app
        .accounts
        .create_link(&who.user, ip, target.id, kind)
        .await
    {
        Ok(token) => token,
        Err(err) => return refused(&app, &who, err).await,
    };
    let url = kind.url(&app.public_url, &token);
    let mailed = mail_link(&app, (&who.user, &target.name, &target.email), mail, &url).await?;
    team_page_with(
        &app,
        &who,
        None,
        Some(NewLink {
            who: target.name,
            what: what.to_owned(),
            mailed,
            url,
            lasts: kind.lasts(),
        }),
        StatusCode::OK,
    )
    .await
}

#[derive(Debug, Deserialize)]
pub struct RoleForm {
    #[serde(default)]
    role: String,
}

async fn refused(
    app: &AppState,
    who: &SignedIn,
    err: accounts::Error,
) -> Result<Response, PageError> {
    match err {
        accounts::Error::Conflict(text) => {
            let notice = Some(Notice::Error(text.to_owned()));
            team_page_with(app, who, notice, None, StatusCode::CONFLICT).await
        }
        accounts::Error::Invalid(invalid) => {
            let notice = Some(Notice::Error(invalid.0.into_owned()));
            team_page_with(app, who, notice, None, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        other => Err(other.into()),
    }
}

#[derive(Debug, Deserialize)]
pub struct NameForm {
    #[serde(default)]
    name: String,
}

/// `POST /team/{id}/name`: an admin corrects a colleague's name (an invitation's typo before
/// they ever sign in, say); audited as `user.renamed` like a change on `/account`.
pub async fn rename(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<NameForm>,
) -> Result<Response, PageError> {
    let actor = Actor::user(&who.user, ip);
    match app.accounts.rename(&actor, UserId(id), &form.name).await {
        Ok(()) => Ok(see_other("/team?notice=renamed")),
        Err(err) => refused(&app, &who, err).await,
    }
}

/// `POST /team/{id}/role`.
pub async fn change_role(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<RoleForm>,
) -> Result<Response, PageError> {
    let actor = Actor::user(&who.user, ip);
    match app
        .accounts
        .change_role(&actor, UserId(id), &form.role)
        .await
    {
        Ok(true) => Ok(see_other("/team?notice=role-changed")),
        Ok(false) => Ok(see_other("/team?notice=role-unchanged")),
        Err(err) => refused(&app, &who, err).await,
    }
}

/// `POST /team/{id}/disable`: their sessions end and their API tokens stop working at once.
pub async fn disable(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    match app
        .accounts
        .set_disabled(&Actor::user(&who.user, ip), UserId(id), true)
        .await
    {
        Ok(()) => {
            // Nobody would answer them: back to the team, as unassigned.
            let user = app
                .readers
                .read(move |c| store::find_user(c, UserId(id)))
                .await?;
            if let Some(user) = user {
                app.chat.unassign_all_of(&user, &who.user).await?;
            }
            Ok(see_other("/team?notice=disabled"))
        }
        Err(err) => refused(&app, &who, err).await,
    }
}

/// `POST /team/{id}/enable`.
pub async fn enable(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    match app
        .accounts
        .set_disabled(&Actor::user(&who.user, ip), UserId(id), false)
        .await
    {
        Ok(()) => Ok(see_other("/team?notice=enabled")),
        Err(err) => refused(&app, &who, err).await,
    }
}

/// `POST /team/{id}/two-factor/reset`: for a lost phone. Their factor, recovery codes and
/// sessions go; they sign in with the password alone (or set it up again if required).
pub async fn reset_two_factor(
    State(app): State<AppState>,
    Path(id): Path<i64>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, .. }: AdminPosted<NoFields>,
) -> Result<Response, PageError> {
    match app
        .accounts
        .reset_two_factor(&Actor::user(&who.user, ip), UserId(id))
        .await
    {
        Ok(()) => Ok(see_other("/team?notice=two-factor-reset")),
        Err(err) => refused(&app, &who, err).await,
    }
}

#[derive(Debug, Deserialize)]
pub struct RequireForm {
    #[serde(default)]
    required: Checkbox,
}

/// `POST /team/two-factor`: requires two-factor sign-in for the team, or stops requiring it.
pub async fn require_two_factor(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    AdminPosted { who, form }: AdminPosted<RequireForm>,
) -> Result<Response, PageError> {
    match app
        .accounts
        .set_two_factor_required(&Actor::user(&who.user, ip), form.required.0)
        .await
    {
        Ok(()) => Ok(see_other("/team?notice=two-factor-saved")),
        Err(err) => refused(&app, &who, err).await,
    }
}

/// Queues the link's mail when email is configured; returns whether it was queued.
async fn mail_link(
    app: &AppState,
    (admin, name, email): (&UserRow, &str, &str),
    link: AccountLink,
    url: &str,
) -> Result<bool, PageError> {
    if app.mailer.is_none() {
        return Ok(false);
    }
    // An invitation names the sites the person will answer for; the link is made already, so a
    // failed read only leaves them out.
    let sites = match link {
        AccountLink::Invitation => match app.readers.read(store::list_sites).await {
            Ok(sites) => sites.into_iter().map(|site| site.settings.name).collect(),
            Err(err) => {
                tracing::warn!(%err, "an invitation mail goes without the site names");
                Vec::new()
            }
        },
        _ => Vec::new(),
    };
    let args = AccountLinkArgs {
        name: name.to_owned(),
        email: email.to_owned(),
        link,
        url: url.to_owned(),
        // On one line: a name stored before line breaks were refused must not lay out the mail.
        made_by: Some(one_line(&admin.name)),
        sites,
    };
    queue_account_link(&app.writer, &app.jobs, args).await?;
    Ok(true)
}

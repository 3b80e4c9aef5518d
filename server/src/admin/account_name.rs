//! The account page's name: each user sets the name visitors and colleagues see, for their own
//! account (an invitation's typo no longer stays for good). Audited as `user.renamed`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use porch_app::layout::Notice;
use serde::Deserialize;

use crate::accounts;
use crate::audit::Actor;
use crate::http::ClientIp;
use crate::state::AppState;

use super::auth::account_page_with;
use super::page::{PageError, see_other};
use super::session::Posted;

#[derive(Debug, Deserialize)]
pub struct NameForm {
    #[serde(default)]
    name: String,
}

/// `POST /account/name`: a name that is empty or too long is refused on the page, with the reason.
pub async fn change_name(
    State(app): State<AppState>,
    ClientIp(ip): ClientIp,
    Posted { who, form }: Posted<NameForm>,
) -> Result<Response, PageError> {
    let actor = Actor::user(&who.user, ip);
    match app.accounts.rename(&actor, who.user.id, &form.name).await {
        Ok(()) => Ok(see_other("/account?notice=name-changed")),
        Err(accounts::Error::Invalid(invalid)) => {
            let notice = Some(Notice::Invalid {
                field: "account-name",
                text: invalid.0.into_owned(),
            });
            account_page_with(&app, &who, notice, StatusCode::UNPROCESSABLE_ENTITY).await
        }
        Err(err) => Err(err.into()),
    }
}

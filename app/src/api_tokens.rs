//! API tokens on the account page: make one (shown once, in full, right after), list one's own
//! (and, for admins, everyone's) with name, scope, creation, expiry and last use, never the
//! token, and revoke one after a confirmation page.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Section, document};
use crate::time::time_view;

/// One token as listed: never its value.
#[derive(Debug, Clone)]
pub struct TokenView {
    pub id: i64,
    pub name: String,
    /// The owner's email, shown in the admins' list of everyone's tokens.
    pub owner: String,
    /// `read` or `read-write`.
    pub scope: String,
    /// Unix milliseconds.
    pub created_at: i64,
    pub expires_at: Option<i64>,
    /// Past its expiry: still listed (until revoked), answered `token_expired`.
    pub is_expired: bool,
    pub last_used_at: Option<i64>,
}

/// A time, or "never".
fn when(ms: Option<i64>) -> AnyView {
    match ms {
        Some(ms) => time_view(ms).into_any(),
        None => "never".into_any(),
    }
}

/// The tokens section of the account page.
#[derive(Debug, Clone, Default)]
pub struct ApiTokensView {
    pub mine: Vec<TokenView>,
    /// Other users' tokens; `Some` only for admins.
    pub others: Option<Vec<TokenView>>,
    /// A token just made: (name, token), shown this once.
    pub created: Option<(String, String)>,
}

#[component]
fn TokenTable(tokens: Vec<TokenView>, with_owner: bool, caption: &'static str) -> impl IntoView {
    if tokens.is_empty() {
        return view! { <p class="muted">"No tokens."</p> }.into_any();
    }
    let rows = tokens
        .into_iter()
        .map(|t| {
            let owner = with_owner.then(|| view! { <td>{t.owner.clone()}</td> });
            view! {
                <tr>
                    <td>{t.name.clone()}</td>
                    {owner}
                    <td>{t.scope.clone()}</td>
                    <td>{time_view(t.created_at)}</td>
                    <td>{when(t.expires_at)}
                        {t.is_expired.then(|| view! { " "<span class="badge badge-muted">"Expired"</span> })}</td>
                    <td>{when(t.last_used_at)}</td>
                    <td>
                        <a class="button button-danger" href=format!("/account/tokens/{}/revoke", t.id)
                            aria-label=format!("Revoke {}", t.name)>"Revoke"</a>
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        // Six columns do not fit a phone: the table scrolls inside its box, not the page.
        // Named by its own caption: two of these on one page must not sound alike.
        <div class="table-scroll" tabindex="0" role="region" aria-label=format!("{caption}, table")>
        <table class="table">
            <caption class="visually-hidden">{caption}</caption>
            <thead>
                <tr>
                    <th scope="col">"Name"</th>
                    {with_owner.then(|| view! { <th scope="col">"User"</th> })}
                    <th scope="col">"Scope"</th>
                    <th scope="col">"Created"</th>
                    <th scope="col">"Expires"</th>
                    <th scope="col">"Last used"</th>
                    <th scope="col"><span class="visually-hidden">"Actions"</span></th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        </div>
    }
    .into_any()
}

/// The account page's API tokens section.
#[component]
pub fn ApiTokensSection(tokens: ApiTokensView, csrf: String) -> impl IntoView {
    let created = tokens.created.map(|(name, token)| {
        view! {
            <div class="notice notice-success new-token" role="status">
                <p>"Token “"{name}"” made. Copy it now: it is not shown again."</p>
                <p><code class="mono" id="new-token">{token}</code></p>
            </div>
        }
    });
    let others = tokens.others.map(|others| {
        view! {
            <h3>"Everyone else's tokens (admins)"</h3>
            <TokenTable tokens=others with_owner=true caption="Other users' API tokens"/>
        }
    });
    view! {
        <section class="card" aria-labelledby="tokens-title" id="api-tokens">
            <h2 id="tokens-title">"API tokens"</h2>
            <p class="hint">"For scripts and dashboards: send it as "<code>"Authorization: Bearer …"</code>" to "<code>"/api/v1"</code>"."</p>
            {created}
            <TokenTable tokens=tokens.mine with_owner=false caption="Your API tokens"/>
            <form method="post" action="/account/tokens" class="stack">
                <CsrfField token=csrf/>
                <div class="field">
                    <label for="token-name">"Name"</label>
                    <input id="token-name" name="name" required maxlength="100"/>
                </div>
                <div class="field">
                    <label for="token-scope">"Scope"</label>
                    <select id="token-scope" name="scope">
                        <option value="read">"Read-only (GET)"</option>
                        <option value="read-write">"Read and write"</option>
                    </select>
                </div>
                <div class="field">
                    <label for="token-expires">"Expires"</label>
                    <select id="token-expires" name="expires">
                        <option value="30">"In 30 days"</option>
                        <option value="90" selected=true>"In 90 days"</option>
                        <option value="365">"In 365 days"</option>
                        <option value="never">"Never"</option>
                    </select>
                </div>
                <button type="submit" class="button button-primary">"Make token"</button>
            </form>
            {others}
        </section>
    }
}

/// The page asking to confirm a revocation.
#[derive(Debug, Clone)]
pub struct RevokeTokenView {
    pub nav: Nav,
    pub token: TokenView,
}

/// Renders the revocation's confirmation page.
pub fn render_revoke_token(view: RevokeTokenView) -> String {
    let csrf = view.nav.csrf.clone();
    let nav = Nav {
        section: Section::Account,
        ..view.nav
    };
    let token = view.token;
    let content = view! {
        <section class="card card-narrow" aria-labelledby="revoke-title">
            <h1 id="revoke-title">"Revoke “"{token.name.clone()}"”?"</h1>
            <p>"Owner: "{token.owner}" · scope "{token.scope}" · last used "{when(token.last_used_at)}</p>
            <p>"Anything using it gets 401 from its next request. This cannot be undone."</p>
            <form method="post" action=format!("/account/tokens/{}/revoke", token.id) class="stack">
                <CsrfField token=csrf/>
                <button type="submit" class="button button-danger">"Revoke token"</button>
                <a class="button" href="/account">"Cancel"</a>
            </form>
        </section>
    };
    document("Revoke token", Some(nav), false, content.into_any())
}

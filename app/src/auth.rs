//! Pages for getting in: first-run setup, sign-in, asking for a reset link, choosing a password through an invitation or
//! reset link, the account page (change password), and the error page.

use leptos::prelude::*;

use crate::api_tokens::{ApiTokensSection, ApiTokensView};
use crate::layout::{
    CsrfField, KeysSwitch, Nav, Notice, NoticeBox, Section, document, field_marks,
};
use crate::two_factor::{TwoFactorSection, TwoFactorSummary};

/// The first-run setup form.
#[derive(Debug, Clone, Default)]
pub struct SetupView {
    pub csrf: String,
    pub email: String,
    pub name: String,
    /// A refusal, about one field ([`Notice::Invalid`]), which the form marks.
    pub notice: Option<Notice>,
}

/// Renders the setup page.
pub fn render_setup(view: SetupView) -> String {
    let refused = view.notice.as_ref().and_then(Notice::field);
    let content = view! {
        <section class="card card-narrow" aria-labelledby="setup-title">
            <h1 id="setup-title">"Welcome to Porch"</h1>
            <p class="lead">
                "Create the first admin account. The setup token is printed in the server log \
                 when Porch starts; it proves you run this server."
            </p>
            <NoticeBox notice=view.notice/>
            <form method="post" action="/setup" class="stack">
                <CsrfField token=view.csrf/>
                <div class="field">
                    <label for="token">"Setup token"</label>
                    <input id="token" name="token" type="text" required autocomplete="off"
                        spellcheck="false" class="mono" {..field_marks(refused, "token", None)}/>
                </div>
                <div class="field">
                    <label for="name">"Your name"</label>
                    <input id="name" name="name" type="text" required autocomplete="name"
                        value=view.name {..field_marks(refused, "name", Some("setup-name-hint"))}/>
                    <p class="hint" id="setup-name-hint">"Visitors see it next to your replies."</p>
                </div>
                <div class="field">
                    <label for="email">"Email"</label>
                    <input id="email" name="email" type="email" required autocomplete="username"
                        value=view.email {..field_marks(refused, "email", None)}/>
                </div>
                <div class="field">
                    <label for="password">"Password"</label>
                    <input id="password" name="password" type="password" required minlength="10"
                        autocomplete="new-password"
                        {..field_marks(refused, "password", Some("password-hint"))}/>
                    <p class="hint" id="password-hint">"At least 10 characters."</p>
                </div>
                <button type="submit" class="button button-primary">"Create admin account"</button>
            </form>
        </section>
    };
    document("Set up", None, false, content.into_any())
}

/// The sign-in form.
#[derive(Debug, Clone, Default)]
pub struct LoginView {
    pub csrf: String,
    pub email: String,
    pub next: String,
    pub notice: Option<Notice>,
    /// The single sign-on button, when it is configured.
    pub sso: Option<SsoButton>,
}

/// Signing in through the organisation's OpenID Connect provider.
#[derive(Debug, Clone, Default)]
pub struct SsoButton {
    /// The button's text (`PORCH_OIDC_LABEL`).
    pub label: String,
    /// `/login/sso` with the `next` page.
    pub href: String,
    /// Why the button cannot be used yet (the provider not reached, or misconfigured): this
    /// hint replaces it. `None` once Porch has read the provider's configuration.
    pub unavailable: Option<String>,
    /// The page's error notice already says `unavailable`: the hint is left out, not said twice.
    pub is_said_above: bool,
}

/// Renders the sign-in page.
pub fn render_login(view: LoginView) -> String {
    let content = view! {
        <section class="card card-narrow" aria-labelledby="login-title">
            <div class="brand brand-large"><span class="brand-mark" aria-hidden="true"></span>"Porch"</div>
            <h1 id="login-title">"Sign in"</h1>
            <NoticeBox notice=view.notice/>
            <form method="post" action="/login" class="stack">
                <CsrfField token=view.csrf/>
                <input type="hidden" name="next" value=view.next/>
                <div class="field">
                    <label for="email">"Email"</label>
                    <input id="email" name="email" type="email" required autocomplete="username"
                        autofocus value=view.email/>
                </div>
                <div class="field">
                    <label for="password">"Password"</label>
                    <input id="password" name="password" type="password" required
                        autocomplete="current-password"/>
                </div>
                <button type="submit" class="button button-primary">"Sign in"</button>
            </form>
            {view.sso.map(|sso| view! {
                <div class="sso">
                    {match sso.unavailable {
                        None => view! { <a class="button" id="sso" href=sso.href>{sso.label}</a> }
                            .into_any(),
                        Some(_) if sso.is_said_above => ().into_any(),
                        Some(why) => view! { <p class="hint" id="sso-unavailable">{why}</p> }
                            .into_any(),
                    }}
                </div>
            })}
            <p class="hint"><a href="/password-resets">"Forgot your password?"</a></p>
        </section>
    };
    document("Sign in", None, false, content.into_any())
}

/// The "Forgot your password?" page.
#[derive(Debug, Clone, Default)]
pub struct ForgotView {
    pub csrf: String,
    /// False when the server has no SMTP: the page says whom to ask instead of a form.
    pub can_mail: bool,
    pub email: String,
    /// The address a request was just taken for.
    pub sent_to: Option<String>,
    pub error: Option<String>,
}

/// Renders the page that mails a link to choose a new password.
pub fn render_forgot(view: ForgotView) -> String {
    let body = if let Some(email) = view.sent_to {
        view! {
            <div class="notice notice-success" role="status">
                <p>"If " <strong>{email}</strong> " is the address of an account here, a link to \
                    choose a new password is on its way. It works once and expires."</p>
                <p>"Nothing within a few minutes? Look in the spam folder, check the address, or \
                    ask an admin of your team for a link."</p>
            </div>
            <p><a href="/login">"Back to sign in"</a></p>
        }
        .into_any()
    } else if view.can_mail {
        view! {
            <p class="lead">"Enter the address you sign in with. We mail you a link to choose \
                a new password."</p>
            <NoticeBox notice=view.error.map(Notice::Error)/>
            <form method="post" action="/password-resets" class="stack">
                <CsrfField token=view.csrf/>
                <div class="field">
                    <label for="email">"Email"</label>
                    <input id="email" name="email" type="email" required autocomplete="username"
                        autofocus value=view.email/>
                </div>
                <button type="submit" class="button button-primary">"Mail me a link"</button>
            </form>
            <p><a href="/login">"Back to sign in"</a></p>
        }
        .into_any()
    } else {
        view! {
            <p class="lead">"This server cannot send email, so ask an admin of your team for a \
                reset link: they make one on the Team page."</p>
            <p><a href="/login">"Back to sign in"</a></p>
        }
        .into_any()
    };
    let content = view! {
        <section class="card card-narrow" aria-labelledby="forgot-title">
            <h1 id="forgot-title">"Forgot your password?"</h1>
            {body}
        </section>
    };
    document("Forgot your password?", None, false, content.into_any())
}

/// Choosing a password through an invitation or reset link.
#[derive(Debug, Clone)]
pub struct PasswordLinkView {
    pub csrf: String,
    pub is_invitation: bool,
    pub name: String,
    pub email: String,
    pub action: String,
    /// Why the password was refused (the page's one typed field, which is marked).
    pub error: Option<String>,
    /// The name of whoever this browser is signed in as, if anyone: choosing the password ends
    /// that session, which the page says first.
    pub signed_in_as: Option<String>,
}

/// Renders the page behind an invitation or reset link.
pub fn render_password_link(view: PasswordLinkView) -> String {
    let notice = view.error.map(|text| Notice::Invalid {
        field: "password",
        text,
    });
    let refused = notice.as_ref().and_then(Notice::field);
    let (title, lead, button) = if view.is_invitation {
        (
            "Join the team",
            format!(
                "Welcome, {}! Choose a password to finish setting up your account.",
                view.name
            ),
            "Create my account",
        )
    } else {
        (
            "Choose a new password",
            // "Ben B." takes no second full stop.
            format!(
                "Choose a new password for {}{}",
                view.name,
                if view.name.ends_with('.') { "" } else { "." }
            ),
            "Save password",
        )
    };
    let content = view! {
        <section class="card card-narrow" aria-labelledby="link-title">
            <h1 id="link-title">{title}</h1>
            <p class="lead">{lead}</p>
            {view.signed_in_as.map(|who| view! {
                <p class="notice" data-signed-in-as>{format!("This browser is signed in as {who}: \
                    choosing this password ends that session, and the browser is then signed in \
                    as {}.", view.name)}</p>
            })}
            <NoticeBox notice=notice/>
            <form method="post" action=view.action class="stack">
                <CsrfField token=view.csrf/>
                <div class="field">
                    <label for="email">"Email"</label>
                    <input id="email" type="email" value=view.email readonly autocomplete="username"/>
                </div>
                <div class="field">
                    <label for="password">"New password"</label>
                    <input id="password" name="password" type="password" required minlength="10"
                        autocomplete="new-password"
                        {..field_marks(refused, "password", Some("password-hint"))}/>
                    <p class="hint" id="password-hint">"At least 10 characters."</p>
                </div>
                <button type="submit" class="button button-primary">{button}</button>
            </form>
        </section>
    };
    document(title, None, false, content.into_any())
}

/// The account page.
#[derive(Debug, Clone)]
pub struct AccountView {
    pub nav: Nav,
    pub name: String,
    pub email: String,
    pub role: String,
    pub notice: Option<Notice>,
    pub two_factor: TwoFactorSummary,
    pub tokens: ApiTokensView,
    /// False for someone who signs in only through single sign-on: no password to change.
    pub has_password: bool,
}

/// Renders the account page (change password, two-factor sign-in, API tokens).
pub fn render_account(view: AccountView) -> String {
    let csrf = view.nav.csrf.clone();
    let token_csrf = csrf.clone();
    let refused = view.notice.as_ref().and_then(Notice::field);
    let nav = Nav {
        section: Section::Account,
        ..view.nav
    };
    let content = view! {
        <div class="page-head">
            <h1>"Your account"</h1>
            <p class="muted">{view.email}" · "{view.role}</p>
        </div>
        <NoticeBox notice=view.notice/>
        <section class="card card-narrow" aria-labelledby="name-title">
            <h2 id="name-title">"Your name"</h2>
            <p class="hint" id="name-hint">"Visitors see it next to your replies, and your team in \
                the inbox. Earlier messages keep the name they were sent with."</p>
            <form method="post" action="/account/name" class="stack">
                <CsrfField token=csrf.clone()/>
                <div class="field">
                    <label for="account-name">"Display name"</label>
                    <input id="account-name" name="name" type="text" required maxlength="80"
                        autocomplete="name" {..field_marks(refused, "account-name", Some("name-hint"))}
                        value=view.name/>
                </div>
                <button type="submit" class="button">"Save name"</button>
            </form>
        </section>
        {password_section(view.has_password, csrf.clone(), refused)}
        <section class="card card-narrow" aria-labelledby="sessions-title">
            <h2 id="sessions-title">"Sessions"</h2>
            <p class="hint">"Signed in on a computer you no longer use, or lost one? Sign out \
                everywhere but here; open pages there are signed out at once."</p>
            <form method="post" action="/account/sessions/sign-out-others">
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button">"End my other sessions"</button>
            </form>
        </section>
        <section class="card card-narrow" aria-labelledby="keys-title">
            <h2 id="keys-title">"Keyboard shortcuts"</h2>
            <p class="hint">"The inbox and conversation pages answer single keys (the list is \
                under ?). Turn them off if you use speech input or they get in your way; this \
                browser remembers it."</p>
            <p><KeysSwitch/></p>
        </section>
        <TwoFactorSection summary=view.two_factor csrf=csrf.clone() has_password=view.has_password/>
        <ApiTokensSection tokens=view.tokens csrf=token_csrf/>
    };
    document("Your account", Some(nav), false, content.into_any())
}

/// An error page: what went wrong and where to go.
#[derive(Debug, Clone)]
pub struct ErrorView {
    pub nav: Option<Nav>,
    pub status: u16,
    pub title: String,
    pub message: String,
}

/// Renders an error page.
pub fn render_error(view: ErrorView) -> String {
    // Someone signed out (a used invitation, say) would only be sent on to the sign-in page.
    let (href, text) = if view.nav.is_some() {
        ("/", "Go to the inbox")
    } else {
        ("/login", "Sign in")
    };
    let content = view! {
        <section class="card card-narrow error-page" aria-labelledby="error-title">
            <p class="error-code">{view.status}</p>
            <h1 id="error-title">{view.title.clone()}</h1>
            <p>{view.message}</p>
            <p><a class="button" href=href>{text}</a></p>
        </section>
    };
    document(&view.title, view.nav, false, content.into_any())
}

/// The account page's password card: the change form, or for someone who signs in only through
/// single sign-on, how they get a password if they need one.
fn password_section(has_password: bool, csrf: String, refused: Option<&str>) -> AnyView {
    if !has_password {
        return view! {
            <section class="card card-narrow" aria-labelledby="password-title">
                <h2 id="password-title">"Password"</h2>
                <p class="hint">"You sign in with single sign-on and have no password. Need one, \
                    for when the provider is down? Ask an admin for a reset link."</p>
            </section>
        }
        .into_any();
    }
    view! {
        <section class="card card-narrow" aria-labelledby="password-title">
            <h2 id="password-title">"Change password"</h2>
            <p class="hint">"You stay signed in here; your other sessions are signed out."</p>
            <form method="post" action="/account/password" class="stack">
                <CsrfField token=csrf/>
                <div class="field">
                    <label for="current">"Current password"</label>
                    <input id="current" name="current" type="password" required
                        autocomplete="current-password" {..field_marks(refused, "current", None)}/>
                </div>
                <div class="field">
                    <label for="new">"New password"</label>
                    <input id="new" name="new" type="password" required minlength="10"
                        autocomplete="new-password" {..field_marks(refused, "new", None)}/>
                </div>
                <button type="submit" class="button button-primary">"Change password"</button>
            </form>
        </section>
    }
    .into_any()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reset_page_with(name: &str, error: Option<&str>) -> String {
        render_password_link(PasswordLinkView {
            csrf: "t".into(),
            is_invitation: false,
            name: name.into(),
            email: "ben@example.com".into(),
            action: "/password-resets/x".into(),
            error: error.map(str::to_owned),
            signed_in_as: None,
        })
    }

    fn reset_page(name: &str) -> String {
        reset_page_with(name, None)
    }

    /// The password is the page's one typed field: its refusal marks it, described by the
    /// reason first, then by its hint.
    #[test]
    fn a_refused_password_is_marked() {
        let html = reset_page_with(
            "Ben",
            Some("The password must have at least 10 characters."),
        );
        assert!(html.contains(r#"aria-invalid="true""#), "{html}");
        assert!(
            html.contains(r#"aria-describedby="form-error password-hint""#),
            "{html}"
        );
        let plain = reset_page("Ben");
        assert!(!plain.contains("aria-invalid"), "{plain}");
        assert!(
            plain.contains(r#"aria-describedby="password-hint""#),
            "{plain}"
        );
    }

    #[test]
    fn a_name_ending_in_a_full_stop_gets_no_second_one() {
        assert!(reset_page("Ben B.").contains("Choose a new password for Ben B.<"));
        assert!(reset_page("Ben").contains("Choose a new password for Ben.<"));
    }
}

//! Two-factor sign-in pages: the account page's section, setting it up (QR code and secret),
//! recovery codes shown once, and the sign-in's second step. The QR code is drawn here as an
//! inline SVG path from a module matrix the server computes; no image service, no script.

use leptos::prelude::*;

use crate::layout::{CsrfField, Nav, Notice, NoticeBox, Section, document};

/// A QR code's modules, row by row (`true` is dark).
#[derive(Debug, Clone, Default)]
pub struct QrView {
    pub width: usize,
    pub dark: Vec<bool>,
}

/// Modules of light margin around a QR code (the "quiet zone" readers need).
const QUIET: usize = 4;

/// The SVG path drawing every dark module as a unit square.
fn qr_path(qr: &QrView) -> String {
    use std::fmt::Write as _;
    let mut d = String::new();
    for (i, _) in qr.dark.iter().enumerate().filter(|(_, dark)| **dark) {
        let (x, y) = (i % qr.width.max(1) + QUIET, i / qr.width.max(1) + QUIET);
        let _ = write!(d, "M{x} {y}h1v1h-1z");
    }
    d
}

#[component]
fn QrCode(qr: QrView) -> impl IntoView {
    let size = qr.width + 2 * QUIET;
    let view_box = format!("0 0 {size} {size}");
    view! {
        <svg class="qr" viewBox=view_box role="img" aria-label="QR code for your authenticator app"
            shape-rendering="crispEdges">
            <rect width=size height=size fill="#fff"/>
            <path d=qr_path(&qr) fill="#000"/>
        </svg>
    }
}

/// Where a user stands, for the account page.
#[derive(Debug, Clone, Copy, Default)]
pub struct TwoFactorSummary {
    pub is_on: bool,
    pub is_pending: bool,
    pub recovery_codes_left: i64,
    pub is_required: bool,
}

fn code_field(id: &'static str) -> impl IntoView {
    view! {
        <div class="field">
            <label for=id>"Code from your app, or a recovery code"</label>
            <input id=id name="code" type="text" required autocomplete="one-time-code"
                spellcheck="false" class="mono"/>
        </div>
    }
}

/// The account page's two-factor section. Someone who signs in only through single sign-on
/// (`has_password` false) is told why it is not theirs: it guards password sign-ins.
#[component]
pub fn TwoFactorSection(
    summary: TwoFactorSummary,
    csrf: String,
    has_password: bool,
) -> impl IntoView {
    let body = if !has_password {
        let reset = if summary.is_on {
            " It is on from before: an admin can reset it on the team page."
        } else {
            ""
        };
        view! {
            <p class="hint">"Two-factor sign-in guards sign-ins with a password, and you sign in \
                with single sign-on, where your provider asks for any second step."{reset}</p>
        }
        .into_any()
    } else if summary.is_on {
        let regenerate_csrf = csrf.clone();
        let disable = if summary.is_required {
            view! { <p class="hint">"The team requires two-factor sign-in, so it stays on. \
            Lost your phone? An admin can reset it."</p> }
            .into_any()
        } else {
            view! {
                <form method="post" action="/account/two-factor/disable" class="stack">
                    <CsrfField token=csrf/>
                    <h3>"Turn off two-factor sign-in"</h3>
                    <div class="field">
                        <label for="disable-password">"Current password"</label>
                        <input id="disable-password" name="password" type="password" required
                            autocomplete="current-password"/>
                    </div>
                    {code_field("disable-code")}
                    <button type="submit" class="button button-danger">"Turn off"</button>
                </form>
            }
            .into_any()
        };
        view! {
            <p><span class="badge badge-open">"On"</span>" "
                <span id="recovery-left">{summary.recovery_codes_left}</span>
                " unused recovery codes left."</p>
            <form method="post" action="/account/two-factor/recovery-codes" class="stack">
                <CsrfField token=regenerate_csrf/>
                <h3>"New recovery codes"</h3>
                <p class="hint">"Replaces all your recovery codes; the old ones stop working."</p>
                {code_field("regenerate-code")}
                <button type="submit" class="button">"Make new recovery codes"</button>
            </form>
            {disable}
        }
        .into_any()
    } else {
        let lead = if summary.is_required {
            "The team requires it. "
        } else {
            ""
        };
        let label = if summary.is_pending {
            "Continue setting up two-factor sign-in"
        } else {
            "Set up two-factor sign-in"
        };
        view! {
            <p class="hint">{lead}"After your password, sign-in also asks for a 6-digit code \
                from an authenticator app on your phone."</p>
            <form method="post" action="/account/two-factor/setup">
                <CsrfField token=csrf/>
                <button type="submit" class="button button-primary">{label}</button>
            </form>
        }
        .into_any()
    };
    view! {
        <section class="card card-narrow" aria-labelledby="two-factor-title" id="two-factor">
            <h2 id="two-factor-title">"Two-factor sign-in"</h2>
            {body}
        </section>
    }
}

/// Setting two-factor up: the QR code, the secret, and the first code.
#[derive(Debug, Clone)]
pub struct EnrolmentView {
    /// The navigation on the account page; `None` during a sign-in.
    pub nav: Option<Nav>,
    pub csrf: String,
    /// Where the first code is posted.
    pub action: String,
    pub secret_text: String,
    pub uri: String,
    pub qr: QrView,
    pub notice: Option<Notice>,
}

/// Renders the setup page.
pub fn render_enrolment(view: EnrolmentView) -> String {
    let lead = if view.nav.is_some() {
        "Scan the QR code with an authenticator app, then enter the code it shows."
    } else {
        "The team requires two-factor sign-in. Scan the QR code with an authenticator app, \
         then enter the code it shows to finish signing in (within 5 minutes)."
    };
    let nav = view.nav.map(|nav| Nav {
        section: Section::Account,
        ..nav
    });
    let content = view! {
        <section class="card card-narrow" aria-labelledby="enrol-title">
            <h1 id="enrol-title">"Set up two-factor sign-in"</h1>
            <p class="lead">{lead}</p>
            <NoticeBox notice=view.notice/>
            <QrCode qr=view.qr/>
            <p class="hint">"Cannot scan? Enter this key in the app (time-based, 6 digits, 30 seconds):"</p>
            <p><code id="totp-secret" class="secret">{view.secret_text}</code></p>
            <p class="hint small otpauth">"Or open: "<a id="totp-uri" href=view.uri.clone()>{view.uri.clone()}</a></p>
            <form method="post" action=view.action class="stack">
                <CsrfField token=view.csrf/>
                <div class="field">
                    <label for="code">"Code from the app"</label>
                    <input id="code" name="code" type="text" required inputmode="numeric"
                        autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" class="mono"/>
                </div>
                <button type="submit" class="button button-primary">"Turn on two-factor sign-in"</button>
            </form>
        </section>
    };
    document("Set up two-factor sign-in", nav, false, content.into_any())
}

/// Recovery codes, shown once.
#[derive(Debug, Clone)]
pub struct RecoveryCodesView {
    pub nav: Option<Nav>,
    pub codes: Vec<String>,
    /// Where "Continue" leads.
    pub continue_to: String,
}

/// Renders the recovery codes page.
pub fn render_recovery_codes(view: RecoveryCodesView) -> String {
    let codes = view
        .codes
        .into_iter()
        .map(|code| view! { <li><code>{code}</code></li> })
        .collect_view();
    let content = view! {
        <section class="card card-narrow card-highlight" aria-labelledby="codes-title">
            <h1 id="codes-title">"Your recovery codes"</h1>
            // The focus starts on the news (after the form, it would start nowhere), so a screen
            // reader says at once that it worked.
            <p class="lead" tabindex="-1" autofocus>"Two-factor sign-in is on. Keep these codes \
                somewhere safe: each one signs you in once if you lose your phone. They are shown \
                only now."</p>
            <ol class="recovery-codes" id="recovery-codes">{codes}</ol>
            <p><a class="button button-primary" href=view.continue_to>"Continue"</a></p>
        </section>
    };
    document("Recovery codes", view.nav, false, content.into_any())
}

/// The sign-in's second step.
#[derive(Debug, Clone, Default)]
pub struct SecondStepView {
    pub csrf: String,
    pub notice: Option<Notice>,
}

/// Renders the second step of signing in.
pub fn render_second_step(view: SecondStepView) -> String {
    let content = view! {
        <section class="card card-narrow" aria-labelledby="second-title">
            <div class="brand brand-large"><span class="brand-mark" aria-hidden="true"></span>"Porch"</div>
            <h1 id="second-title">"Two-factor sign-in"</h1>
            <p class="lead">"Enter the 6-digit code from your authenticator app."</p>
            <NoticeBox notice=view.notice/>
            <form method="post" action="/login/two-factor" class="stack">
                <CsrfField token=view.csrf/>
                <div class="field">
                    <label for="code">"Code"</label>
                    <input id="code" name="code" type="text" required autofocus
                        autocomplete="one-time-code" spellcheck="false" class="mono"/>
                    <p class="hint">"Lost your phone? Enter one of your recovery codes instead."</p>
                </div>
                <button type="submit" class="button button-primary">"Sign in"</button>
            </form>
            <p class="hint"><a href="/login">"Start again"</a></p>
        </section>
    };
    document("Two-factor sign-in", None, false, content.into_any())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_qr_path_draws_each_dark_module_inside_the_quiet_zone() {
        let qr = QrView {
            width: 2,
            dark: vec![true, false, false, true],
        };
        assert_eq!(qr_path(&qr), "M4 4h1v1h-1zM5 5h1v1h-1z");
    }

    #[test]
    fn the_setup_page_draws_the_qr_code_inline_and_escapes_the_uri() {
        let html = render_enrolment(EnrolmentView {
            nav: None,
            csrf: "c".into(),
            action: "/login/two-factor/setup".into(),
            secret_text: "ABCD EFGH".into(),
            uri: "otpauth://totp/Porch:a\"<b>@x?secret=ABCDEFGH&issuer=Porch".into(),
            qr: QrView {
                width: 1,
                dark: vec![true],
            },
            notice: None,
        });
        assert!(
            html.contains(r##"<path d="M4 4h1v1h-1z" fill="#000">"##),
            "{html}"
        );
        assert!(html.contains(r#"class="qr""#));
        assert!(!html.contains("<b>"), "{html}");
    }
}

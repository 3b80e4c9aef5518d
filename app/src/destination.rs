//! What every destination page (Slack, Discord, webhooks, email) shows the same way: the
//! integration's health, the outcome of a test the admin queued, and the forms that turn it off
//! and on or delete it.

use leptos::prelude::*;

use crate::layout::CsrfField;
use crate::time::format_time;

/// How an integration's deliveries are going.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HealthView {
    /// Its last delivery went out (or none was tried yet).
    Healthy,
    /// Deliveries wait until an admin acts: the destination refused us, or the integration was
    /// turned off. `reason` says which.
    Blocked { reason: String },
    /// A delivery's last attempt failed: its error and when. It is being retried, or it ran
    /// out of tries (`is_given_up`) and waits on the Deliveries page.
    Failing {
        error: String,
        at: i64,
        is_given_up: bool,
    },
}

/// The health of an integration: a badge and, when something is wrong, what and since when.
/// `id` ([`HEALTH`]) on a page with a test, whose outcome may change it.
#[component]
pub fn Health(health: HealthView, #[prop(optional)] id: Option<&'static str>) -> impl IntoView {
    let (name, badge_class, badge) = match &health {
        HealthView::Healthy => ("healthy", "badge badge-open", "Healthy"),
        HealthView::Blocked { .. } => ("blocked", "badge badge-danger", "Blocked"),
        HealthView::Failing { .. } => ("failing", "badge badge-danger", "Failing"),
    };
    let detail = match health {
        HealthView::Healthy => None,
        HealthView::Blocked { reason } => Some(
            view! {
                <p class="notice notice-error" role="alert">"Blocked: "{reason}
                    ". Deliveries wait until it is fixed or turned on; then they go out in order."</p>
            }
            .into_any(),
        ),
        HealthView::Failing {
            error,
            at,
            is_given_up,
        } => {
            let (iso, text) = format_time(at);
            let next = if is_given_up {
                view! {
                    " That delivery ran out of tries: retry or dismiss it on the "
                    <a href="/deliveries">"Deliveries"</a>" page. This clears when a later delivery goes out."
                }
                .into_any()
            } else {
                view! { " Porch tries it again on its schedule." }.into_any()
            };
            Some(
                view! {
                    <p class="notice notice-error" role="alert">"Failing: "<bdi>{error}</bdi>" ("
                        <time datetime=iso>{text}</time>")."{next}</p>
                }
                .into_any(),
            )
        }
    };
    view! {
        <div class="health" data-health=name id=id>
            <p>"Health "<span class=badge_class>{badge}</span></p>
            {detail}
        </div>
    }
}

/// The latest test an admin queued (a test post or a test mail), as its job stands now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestOutcomeView {
    /// When it was queued (Unix milliseconds).
    pub queued_at: i64,
    pub state: TestState,
}

/// Where a test stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TestState {
    /// Queued or being sent: the page's script fetches the outcome again until it is known
    /// (a reload does the same without scripts).
    Queued,
    Sent,
    Failed {
        error: String,
    },
}

/// The id of the latest test's outcome on its page, where a test's form returns to.
pub const TEST_OUTCOME: &str = "test-outcome";
/// The id of a destination's health on a page with a test ([`TestOutcome`] updates it too).
pub const HEALTH: &str = "destination-health";

/// Seconds between the page's fetches of a queued test's outcome.
const TEST_REFRESH_SECS: &str = "2";

/// The outcome of the latest test, announced to screen readers. It stays on the page until the
/// next test, with the time it was queued, so "did it work?" can be answered later too. While
/// the test is queued, inbox.js fetches `reload` (the page) every few seconds and updates the
/// outcome in place, with the destination's health it may have changed, so the result appears
/// without a reload (the element stays the same live region, which is what gets the change
/// announced).
#[component]
pub fn TestOutcome(outcome: TestOutcomeView, reload: String) -> impl IntoView {
    let (iso, text) = format_time(outcome.queued_at);
    let when = view! { <time datetime=iso>{text}</time> };
    let page = reload.clone();
    match outcome.state {
        TestState::Queued => view! {
            <p class="notice notice-success" role="status" data-test="queued" id=TEST_OUTCOME
                data-refresh=page data-refresh-every=TEST_REFRESH_SECS data-refresh-with=HEALTH>
                "Test queued ("{when}"), sending\u{2026} The result shows here; "
                <a href=reload>"reload"</a>" if it does not."</p>
        }
        .into_any(),
        TestState::Sent => view! {
            <p class="notice notice-success" role="status" data-test="sent" id=TEST_OUTCOME>
                "Latest test ("{when}"): sent."</p>
        }
        .into_any(),
        TestState::Failed { error } => view! {
            <p class="notice notice-error" role="alert" data-test="failed" id=TEST_OUTCOME>
                "Latest test ("{when}") failed: "<bdi>{error}</bdi></p>
        }
        .into_any(),
    }
}

/// Turn off / turn on and delete, for the integration at `base`
/// (`/sites/{key}/integrations/{id}`).
#[component]
pub fn IntegrationControls(base: String, is_enabled: bool, csrf: String) -> impl IntoView {
    let (action, label) = if is_enabled {
        ("disable", "Turn off")
    } else {
        ("enable", "Turn on")
    };
    let toggle = format!("{base}/{action}");
    let delete = base + "/delete";
    // Deleting asks once more without JavaScript: the button sits inside a closed <details>.
    view! {
        <div class="inline-controls">
            <form method="post" action=toggle>
                <CsrfField token=csrf.clone()/>
                <button type="submit" class="button">{label}</button>
            </form>
            <details>
                <summary class="button button-danger">"Delete…"</summary>
                <form method="post" action=delete>
                    <CsrfField token=csrf/>
                    <p class="small">"Deletes it with its waiting deliveries and delivery log."</p>
                    <button type="submit" class="button button-danger">"Delete for good"</button>
                </form>
            </details>
        </div>
    }
}

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
    /// The last attempt failed and is being retried (or failed for good): its error and when.
    Failing { error: String, at: i64 },
}

/// The health of an integration: a badge and, when something is wrong, what and since when.
#[component]
pub fn Health(health: HealthView) -> impl IntoView {
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
        HealthView::Failing { error, at } => {
            let (iso, text) = format_time(at);
            Some(
                view! {
                    <p class="notice notice-error" role="alert">"Failing: "{error}" ("
                        <time datetime=iso>{text}</time>"). Porch retries on its schedule; a \
                        delivery that ran out of tries waits on the "<a href="/deliveries">"Deliveries"</a>" page."</p>
                }
                .into_any(),
            )
        }
    };
    view! {
        <div class="health" data-health=name>
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
    /// Queued or being sent: reload to see the outcome.
    Queued,
    Sent,
    Failed {
        error: String,
    },
}

/// The id of the latest test's outcome on its page, where a test's form returns to.
pub const TEST_OUTCOME: &str = "test-outcome";

/// The outcome of the latest test, announced to screen readers. It stays on the page until the
/// next test, with the time it was queued, so "did it work?" can be answered later too.
#[component]
pub fn TestOutcome(outcome: TestOutcomeView, reload: String) -> impl IntoView {
    let (iso, text) = format_time(outcome.queued_at);
    let when = view! { <time datetime=iso>{text}</time> };
    match outcome.state {
        TestState::Queued => view! {
            <p class="notice notice-success" role="status" data-test="queued" id=TEST_OUTCOME>
                "Test queued ("{when}"). "<a href=reload>"Reload"</a>
                " to see whether it was sent."</p>
        }
        .into_any(),
        TestState::Sent => view! {
            <p class="notice notice-success" role="status" data-test="sent" id=TEST_OUTCOME>
                "Latest test ("{when}"): sent."</p>
        }
        .into_any(),
        TestState::Failed { error } => view! {
            <p class="notice notice-error" role="alert" data-test="failed" id=TEST_OUTCOME>
                "Latest test ("{when}") failed: "{error}</p>
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

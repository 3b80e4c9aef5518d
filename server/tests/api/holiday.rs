//! A site closed for a holiday (docs/widget.md#business-hours, "Holiday"): the chat is closed
//! from the start of the first day (or the save) to the end of the last day on the site's clock,
//! whatever the weekly hours say, which are kept and apply again after it. Judged at the
//! server's wall clock, fixed by the tests.

use crate::helpers::TestApp;
use crate::prechat_hours::{
    MONDAY_NINE, admin_with_site, hours_form, hours_page, save_hours, set_clock, welcome_site,
};

const HOUR: i64 = 3_600_000;

#[tokio::test]
async fn a_closure_closes_the_chat_through_its_last_day_and_the_hours_apply_after_it() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    set_clock(&app, MONDAY_NINE + HOUR);
    let weekly = hours_form(&admin.csrf, "UTC", "09:00-17:00", "On holiday!", "email");
    // Through Wednesday 2026-03-04: closed now, back Thursday at 09:00.
    let body = format!("{weekly}&closed_through=2026-03-04");
    let saved = save_hours(&app, &admin, &site, &body).await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let closed = welcome_site(&app, &site).await;
    assert_eq!(closed["open"], false, "{closed}");
    assert_eq!(closed["opens_at"], MONDAY_NINE + 72 * HOUR, "{closed}");
    assert_eq!(closed["away_message"], "On holiday!");
    let page = hours_page(&app, &admin, &site).await;
    assert!(page.body.contains("value=\"2026-03-04\""), "{}", page.body);
    // No SMTP here: the out-of-hours choice says, before it, that it waits for email.
    let said = page.body.find("the choice below is").unwrap_or(usize::MAX);
    let choice = page.body.find("name=\"out_of_hours\"").unwrap_or(0);
    assert!(said < choice, "{}", page.body);
    assert!(
        page.body.contains("aria-describedby=\"mail-replies-hint\""),
        "{}",
        page.body
    );
    let detail = app.column::<String>(
        "SELECT detail FROM audit_events WHERE action = 'site.updated' ORDER BY id DESC LIMIT 1",
    );
    assert!(
        detail[0].contains("\"closed_through\":\"2026-03-04\""),
        "{detail:?}"
    );

    // Thursday: the weekly hours again.
    set_clock(&app, MONDAY_NINE + 72 * HOUR - 1);
    assert_eq!(welcome_site(&app, &site).await["open"], false);
    set_clock(&app, MONDAY_NINE + 72 * HOUR);
    assert_eq!(welcome_site(&app, &site).await["open"], true);
    // The day gone by closes nothing: the form offers no date, and saving one is refused.
    let page = hours_page(&app, &admin, &site).await;
    assert!(
        page.body
            .contains("id=\"closed_through\" name=\"closed_through\" type=\"date\" value=\"\""),
        "{}",
        page.body
    );
    let again = save_hours(&app, &admin, &site, &body).await;
    assert_eq!(again.status, 422, "{}", again.body);
    assert!(
        again.body.contains("that day is over on the site"),
        "{}",
        again.body
    );
    let typo = format!("{weekly}&closed_through=next%20week");
    let refused = save_hours(&app, &admin, &site, &typo).await;
    assert_eq!(refused.status, 422);
    assert!(
        refused.body.contains("is not a date; use YYYY-MM-DD"),
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("aria-invalid=\"true\""),
        "{}",
        refused.body
    );
}

/// A closure ending where the weekly hours are open opens the chat at the closure's end.
#[tokio::test]
async fn a_closure_ending_inside_open_hours_opens_at_its_end() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    set_clock(&app, MONDAY_NINE);
    let all_day = hours_form(&admin.csrf, "UTC", "00:00-24:00", "", "accept")
        .replace("09%3A00-17%3A00", "00%3A00-24%3A00");
    let body = format!("{all_day}&closed_through=2026-03-02");
    assert_eq!(save_hours(&app, &admin, &site, &body).await.status, 303);
    let closed = welcome_site(&app, &site).await;
    assert_eq!(closed["open"], false, "{closed}");
    // Monday's end: Tuesday 00:00 UTC.
    assert_eq!(closed["opens_at"], MONDAY_NINE + 15 * HOUR, "{closed}");
    // The last days the clock knows close for good, with no opening (they were taken as no
    // closure: open).
    for last in ["9999-12-30", "9999-12-31"] {
        let body = format!("{all_day}&closed_through={last}");
        assert_eq!(save_hours(&app, &admin, &site, &body).await.status, 303);
        let closed = welcome_site(&app, &site).await;
        assert_eq!(closed["open"], false, "{last}: {closed}");
        assert!(closed.get("opens_at").is_none(), "{last}: {closed}");
    }
}

/// A closure from a later day (Wednesday and Thursday): open until it starts, an evening before
/// it says the chat opens after it (not on Wednesday morning), and closed through it.
#[tokio::test]
async fn a_closure_set_for_later_days_closes_only_those_days() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    set_clock(&app, MONDAY_NINE + HOUR);
    let weekly = hours_form(&admin.csrf, "UTC", "09:00-17:00", "", "accept");
    let body = format!("{weekly}&closed_from=2026-03-04&closed_through=2026-03-05");
    assert_eq!(save_hours(&app, &admin, &site, &body).await.status, 303);
    assert_eq!(welcome_site(&app, &site).await["open"], true);
    let page = hours_page(&app, &admin, &site).await;
    assert!(
        page.body.contains(
            "Open now.</p><p data-holiday-ahead>Closed for a holiday from Wednesday 4 March 2026 \
             through Thursday 5 March 2026.</p>"
        ),
        "{}",
        page.body
    );
    let detail = app.column::<String>(
        "SELECT detail FROM audit_events WHERE action = 'site.updated' ORDER BY id DESC LIMIT 1",
    );
    assert!(
        detail[0].contains("\"closed_from\":\"2026-03-04\""),
        "{detail:?}"
    );

    // Tuesday 18:00: closed by the weekly hours, and the next opening is Friday's.
    let friday_nine = MONDAY_NINE + 96 * HOUR;
    set_clock(&app, MONDAY_NINE + 33 * HOUR);
    let evening = welcome_site(&app, &site).await;
    assert_eq!(evening["opens_at"], friday_nine, "{evening}");
    // Wednesday 10:00, inside the weekly hours: closed through Thursday.
    set_clock(&app, MONDAY_NINE + 49 * HOUR);
    let closed = welcome_site(&app, &site).await;
    assert_eq!(closed["open"], false, "{closed}");
    assert_eq!(closed["opens_at"], friday_nine, "{closed}");
    let page = hours_page(&app, &admin, &site).await;
    assert!(
        page.body.contains(
            "Closed through Thursday 5 March 2026 (holiday); opens Friday 6 March 2026 09:00 UTC"
        ),
        "{}",
        page.body
    );
    set_clock(&app, friday_nine);
    assert_eq!(welcome_site(&app, &site).await["open"], true);

    // One day: said as one ("on", not "from X through X").
    let one = format!("{weekly}&closed_from=2026-03-11&closed_through=2026-03-11");
    assert_eq!(save_hours(&app, &admin, &site, &one).await.status, 303);
    let page = hours_page(&app, &admin, &site).await;
    assert!(
        page.body
            .contains("Closed for a holiday on Wednesday 11 March 2026."),
        "{}",
        page.body
    );
}

/// A first day after the last, or without a last day, is refused on the field to fix.
#[tokio::test]
async fn a_closure_starting_after_its_end_or_without_one_is_refused() {
    let app = TestApp::spawn(&[]).await;
    let (admin, site) = admin_with_site(&app).await;
    set_clock(&app, MONDAY_NINE);
    let weekly = hours_form(&admin.csrf, "UTC", "09:00-17:00", "", "accept");
    for (range, says, field) in [
        (
            "closed_from=2026-03-06&closed_through=2026-03-05",
            "cannot start after its last day",
            "closed_from",
        ),
        (
            "closed_from=2026-03-06",
            "choose the last day of the closure",
            "closed_through",
        ),
    ] {
        let refused = save_hours(&app, &admin, &site, &format!("{weekly}&{range}")).await;
        assert_eq!(refused.status, 422, "{range}");
        assert!(refused.body.contains(says), "{range}: {}", refused.body);
        let marked = format!("id=\"{field}\" name=\"{field}\" type=\"date\" value=\"");
        let input = refused.body.split(&marked).nth(1).expect("the field");
        let tag = &input[..input.find('>').expect("the tag ends")];
        assert!(tag.contains("aria-invalid=\"true\""), "{range}: {tag}");
    }
    assert!(
        app.column::<String>("SELECT time_zone FROM site_hours")
            .is_empty()
    );
}

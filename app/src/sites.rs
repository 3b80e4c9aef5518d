//! Sites (admins only): the list, the create and edit form (look, greeting, allowed origins,
//! brakes), the embed snippet with a copy button, and deleting with a confirmation step.

use leptos::prelude::*;

use crate::layout::{
    CsrfField, FORM_ERROR_ID, Nav, Notice, NoticeBox, Section, document, field_marks, hinted_field,
};

/// A site in the list.
#[derive(Debug, Clone)]
pub struct SiteSummaryView {
    pub key: String,
    pub name: String,
    pub origins: Vec<String>,
    pub color: String,
    /// How many origins were refused its chat since the server started (see
    /// [`RefusedOriginView`]).
    pub refused: usize,
}

/// The sites page.
#[derive(Debug, Clone)]
pub struct SitesView {
    pub nav: Nav,
    pub sites: Vec<SiteSummaryView>,
    pub notice: Option<Notice>,
}

/// The form's values, as strings (what was stored, or what was submitted with an error).
#[derive(Debug, Clone, Default)]
pub struct SiteFormValues {
    pub name: String,
    pub origins: String,
    pub greeting: String,
    pub color: String,
    pub position: String,
    pub visitor_messages_per_minute: String,
    pub visitor_burst: String,
    pub flood_messages_per_minute: String,
    pub flood_conversations_per_minute: String,
    /// Days after which conversations are deleted; empty keeps them.
    pub retention_days: String,
    /// The largest attachment, in MB (only on the edit form: a new site has the default).
    pub attachment_max_mb: String,
    /// The widget's language code; empty: each visitor's browser chooses.
    pub locale: String,
    /// Greetings in other languages, one a line: `de: Hallo!`.
    pub greetings: String,
}

/// The create or edit page.
#[derive(Debug, Clone)]
pub struct SiteFormView {
    pub nav: Nav,
    /// `None` when creating.
    pub key: Option<String>,
    pub values: SiteFormValues,
    /// The languages the widget speaks (code, name), for the language choice.
    pub locales: &'static [(&'static str, &'static str)],
    pub snippet: Option<SnippetView>,
    /// Origins whose pages were refused the chat (edit page only), the latest first.
    pub refused: Vec<RefusedOriginView>,
    pub notice: Option<Notice>,
}

/// The embed snippet of a site.
#[derive(Debug, Clone)]
pub struct SnippetView {
    pub text: String,
    /// The address it points to, when only this computer reaches it (no `PORCH_PUBLIC_URL`, or a
    /// loopback one): the snippet then works on no one's website but here.
    pub only_here: Option<String>,
}

/// An origin whose pages were refused the chat, since the server started: the usual reason a
/// widget does not open is an origin missing from the list (`www.`, `http`, a port).
#[derive(Debug, Clone)]
pub struct RefusedOriginView {
    pub origin: String,
    pub count: u64,
    /// When last, in Unix milliseconds.
    pub last_ms: i64,
}

/// The delete confirmation page.
#[derive(Debug, Clone)]
pub struct DeleteSiteView {
    pub nav: Nav,
    pub key: String,
    pub name: String,
    pub conversations: i64,
    /// Why the last try deleted nothing (a name that did not match), shown above the form.
    pub error: Option<String>,
}

fn admin_nav(nav: Nav) -> Nav {
    Nav {
        section: Section::Sites,
        ..nav
    }
}

/// Renders the list of sites.
pub fn render_sites(view: SitesView) -> String {
    let is_empty = view.sites.is_empty();
    let rows = view
        .sites
        .into_iter()
        .map(|site| {
            let refused = (site.refused > 0).then(|| {
                view! {
                    <a class="refused-hint" href=format!("/sites/{}#refused-title", site.key)>
                        {crate::counted(site.refused, "refused origin")}
                    </a>
                }
            });
            view! {
                <li class="site-row">
                    <span class="swatch" data-color=site.color.clone() aria-hidden="true"></span>
                    <div class="site-main">
                        <a href=format!("/sites/{}", site.key) class="site-name">{site.name}</a>
                        <p class="muted mono small">{site.key}</p>
                    </div>
                    <p class="origins">{site.origins.join(", ")}</p>
                    {refused}
                </li>
            }
        })
        .collect_view();
    let content = view! {
        <div class="page-head">
            <h1>"Sites"</h1>
            <a class="button button-primary" href="/sites/new">"New site"</a>
        </div>
        <NoticeBox notice=view.notice/>
        {if is_empty {
            view! {
                <section class="card empty-card">
                    <h2>"No sites yet"</h2>
                    <p>"A site is a website that shows the chat widget. Create one, then paste its \
                        snippet into your pages."</p>
                    <a class="button button-primary" href="/sites/new">"Create your first site"</a>
                </section>
            }
            .into_any()
        } else {
            view! { <ul class="card list">{rows}</ul> }.into_any()
        }}
    };
    document("Sites", Some(admin_nav(view.nav)), true, content.into_any())
}

fn number_field(
    (id, label, hint): (&'static str, &'static str, &'static str),
    value: String,
    refused: Option<&'static str>,
) -> impl IntoView {
    hinted_field((id, label, hint), move |hint_id| {
        view! {
            <input id=id name=id type="number" min="1" max="100000" required
                {..field_marks(refused, id, Some(&hint_id))} value=value/>
        }
    })
}

/// The site's retention setting (docs/privacy.md): empty keeps conversations.
#[component]
fn RetentionField(days: String, refused: Option<&'static str>) -> impl IntoView {
    view! {
        <fieldset>
            <legend>"Privacy"</legend>
            <div class="field">
                <label for="retention_days">"Delete conversations after (days)"</label>
                <input id="retention_days" name="retention_days" type="number" min="1" max="36500"
                    {..field_marks(refused, "retention_days", Some("retention_days-hint"))}
                    value=days/>
                <p class="hint" id="retention_days-hint">"Conversations are deleted with their \
                    messages this many days after their last message or their closing. Empty keeps \
                    them for ever. Backups keep deleted data for up to 8 days more (see "
                    <a href="/docs/privacy.md">"privacy"</a>")."</p>
            </div>
        </fieldset>
    }
}

/// The largest file the site's visitors and agents may attach (docs/widget.md, "Attachments").
#[component]
fn AttachmentField(megabytes: String, refused: Option<&'static str>) -> impl IntoView {
    view! {
        <fieldset>
            <legend>"Attachments"</legend>
            <div class="field">
                <label for="attachment_max_mb">"Largest attachment (MB)"</label>
                <input id="attachment_max_mb" name="attachment_max_mb" type="number" min="0" max="25"
                    step="0.01" required
                    {..field_marks(refused, "attachment_max_mb", Some("attachment_max_mb-hint"))}
                    value=megabytes/>
                <p class="hint" id="attachment_max_mb-hint">"The largest file visitors and agents \
                    may send, from 0 (no attachments) to 25 MB; a MB here is 1,048,576 bytes. New \
                    sites accept 10 MB."</p>
            </div>
        </fieldset>
    }
}

/// Deleting the site, behind a confirmation page.
#[component]
fn DangerZone(key: String) -> impl IntoView {
    view! {
        <section class="card card-danger" aria-labelledby="danger-title">
            <h2 id="danger-title">"Delete site"</h2>
            <p>"Deletes the site with all its conversations. The widget stops working on its pages."</p>
            <a class="button button-danger" href=format!("/sites/{key}/delete")>"Delete site…"</a>
        </section>
    }
}

/// Links to the site's integration pages.
#[component]
fn Integrations(key: String) -> impl IntoView {
    view! {
        <section class="card" aria-labelledby="integrations-title">
            <h2 id="integrations-title">"Integrations"</h2>
            <p class="hint">"Where this site's conversations are posted besides the inbox. Each page \
                shows the destination's health."</p>
            <div class="inline-controls">
                <a class="button" href=format!("/sites/{key}/slack")>"Slack"</a>
                <a class="button" href=format!("/sites/{key}/discord")>"Discord"</a>
                <a class="button" href=format!("/sites/{key}/webhooks")>"Webhooks"</a>
                <a class="button" href=format!("/sites/{key}/email")>"Email"</a>
            </div>
        </section>
    }
}

/// The widget's language (automatic, or one the widget speaks) and greetings in other languages
/// (docs/widget.md, "Languages").
fn language_fields(
    (locale, locales): (&str, &[(&'static str, &'static str)]),
    greetings: &str,
    refused: Option<&'static str>,
) -> impl IntoView {
    let options = locales
        .iter()
        .map(|&(code, name)| view! { <option value=code selected=locale == code>{name}</option> })
        .collect_view();
    view! {
        <div class="field">
            <label for="locale">"Widget language"</label>
            <select id="locale" name="locale" {..field_marks(refused, "locale", Some("locale-hint"))}>
                <option value="" selected=locale.is_empty()>"Automatic: the visitor's browser language"</option>
                {options}
            </select>
            <p class="hint" id="locale-hint">"Automatic uses the first of the visitor's browser languages \
                the widget speaks, else English. A fixed language is written into the snippet: paste it \
                again after changing it."</p>
        </div>
        <div class="field">
            <label for="greetings">"Greetings in other languages"</label>
            <textarea id="greetings" name="greetings" rows="3"
                {..field_marks(refused, "greetings", Some("greetings-hint"))}>{crate::textarea_text(greetings)}</textarea>
            <p class="hint" id="greetings-hint">"Optional, one a line with the language's code first ("
                <code>"de: Hallo! Wie k\u{f6}nnen wir helfen?"</code>"). A widget in that language shows \
                it instead of the greeting above."</p>
        </div>
    }
}

/// The origins refused the chat, with what to do about it (on the edit page, when there are any).
fn refused_card(refused: Vec<RefusedOriginView>) -> impl IntoView {
    let rows = refused
        .into_iter()
        .map(|r| {
            let (iso, text) = crate::time::format_time(r.last_ms);
            // Not an origin one can allow: a browser says `null` for a page opened from a file.
            let from_a_file = (r.origin == "null").then_some(
                ": a page opened from a file (file://) or shown in a sandboxed frame, which no \
                 allowed origin can let in. Serve the page from a web server (even python3 -m \
                 http.server) and allow that address, or give the frame allow-same-origin.",
            );
            view! {
                <li>
                    <code>{r.origin}</code>" · "
                    {crate::counted(usize::try_from(r.count).unwrap_or(usize::MAX), "time")}
                    ", last "<time datetime=iso>{text}</time>
                    {from_a_file}
                </li>
            }
        })
        .collect_view();
    view! {
        <section class="card card-warning" aria-labelledby="refused-title">
            <h2 id="refused-title">"Pages refused the chat"</h2>
            <p>"Pages on these origins tried to open the chat and were refused: they are not among \
                the allowed origins. If they are your pages, add them to Allowed origins below. \
                Listed since Porch last started."</p>
            <ul class="refused-origins">{rows}</ul>
        </section>
    }
}

/// The embed snippet with its copy button (on the edit page).
fn snippet_card(snippet: &SnippetView) -> impl IntoView {
    let only_here = snippet.only_here.clone().map(|url| {
        view! {
            <p class="hint warning" id="snippet-only-here">
                "This snippet points to "<code>{url}</code>", which only this computer can reach: \
                it works for trying Porch here, but visitors on your website would get \
                \"Chat is unavailable\". Start Porch with "<code>"PORCH_PUBLIC_URL"</code>" set to \
                the address visitors' browsers reach it at (such as "<code>"https://chat.example.com"</code>"), \
                then copy the snippet again ("<a href="/docs/configuration.md">"configuration"</a>")."
            </p>
        }
    });
    view! {
        <section class="card" aria-labelledby="snippet-title">
            <h2 id="snippet-title">"Embed snippet"</h2>
            <p class="hint">"Paste it just before "<code>"</body>"</code>" on every page of the site. \
                The page makes no request to Porch until a visitor opens the chat (later pages reopen a chat \
                the visitor started). Your own button, \
                a Content-Security-Policy, known visitors: "<a href="/docs/widget.md">"the widget's \
                docs"</a>"."</p>
            {only_here}
            <textarea id="snippet" class="snippet mono" readonly rows="5"
                aria-label="Embed snippet">{crate::textarea_text(&snippet.text)}</textarea>
            <button type="button" class="button" data-copy="snippet">"Copy snippet"</button>
            <span class="copied" role="status" data-copied></span>
        </section>
    }
}

/// The panel's message area, which the visitor's own messages and the Send button sit on
/// (`--soft` in server/assets/widget/panel.css), and the same in dark mode.
const PANEL_BACKGROUND: (u8, u8, u8) = (0xf8, 0xfa, 0xfc);
const DARK_PANEL_BACKGROUND: (u8, u8, u8) = (0x0b, 0x12, 0x20);

/// A warning under the colour when it stands out from the panel's near-white, or from its
/// near-black in dark mode, less than WCAG asks of a control (3:1, success criterion 1.4.11): the
/// visitor's own messages, the Send button and, on a page of the same lightness, the chat button
/// would be hard to see. The text on the colour stays readable (the widget writes black or
/// white, whichever contrasts more). No colour is under 3:1 against both.
fn faint_colour_hint(color: &str) -> Option<impl IntoView + use<>> {
    let rgb = parse_hex(color)?;
    let (light, dark) = (
        contrast(rgb, PANEL_BACKGROUND),
        contrast(rgb, DARK_PANEL_BACKGROUND),
    );
    let said = if light < 3.0 {
        format!(
            "This colour stands out little from white ({light:.1}:1; a button needs 3:1): the \
             visitor's own messages, the Send button and, on a light page, the chat button will be \
             hard to see. Text on it stays readable."
        )
    } else if dark < 3.0 {
        format!(
            "This colour stands out little from the dark panel visitors see when their device is \
             in dark mode ({dark:.1}:1; a button needs 3:1): there, the visitor's own messages, the \
             Send button and, on a dark page, the chat button will be hard to see. Text on it \
             stays readable."
        )
    } else {
        return None;
    };
    Some(view! { <p class="hint warning" id="color-hint">{said}</p> })
}

/// `#rrggbb` as its three channels.
fn parse_hex(color: &str) -> Option<(u8, u8, u8)> {
    let hex = color.strip_prefix('#').filter(|hex| hex.len() == 6)?;
    let channel = |at: usize| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok();
    Some((channel(0)?, channel(2)?, channel(4)?))
}

/// WCAG 2 contrast ratio of two sRGB colours, from 1 (the same) to 21 (black on white).
fn contrast(a: (u8, u8, u8), b: (u8, u8, u8)) -> f64 {
    let luminance = |(r, g, b): (u8, u8, u8)| {
        let linear = |c: u8| {
            let c = f64::from(c) / 255.0;
            if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)
    };
    let (la, lb) = (luminance(a), luminance(b));
    (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
}

/// Renders the create or edit form (with the snippet when editing).
pub fn render_site_form(view: SiteFormView) -> String {
    let csrf = view.nav.csrf.clone();
    let values = view.values;
    let is_edit = view.key.is_some();
    let refused = view.notice.as_ref().and_then(Notice::field);
    let language = language_fields((&values.locale, view.locales), &values.greetings, refused);
    let (title, action, button) = match &view.key {
        Some(key) => (values.name.clone(), format!("/sites/{key}"), "Save changes"),
        None => ("New site".to_owned(), "/sites".to_owned(), "Create site"),
    };
    let title = if title.trim().is_empty() {
        "Site".to_owned()
    } else {
        title
    };
    let snippet = view.snippet.as_ref().map(snippet_card);
    let refused_origins = (!view.refused.is_empty()).then(|| refused_card(view.refused));
    let integrations = view.key.clone().map(|key| view! { <Integrations key/> });
    let danger = view.key.clone().map(|key| view! { <DangerZone key/> });
    let is_left = values.position == "left";
    let faint = faint_colour_hint(&values.color);
    let content = view! {
        <div class="page-head">
            <p class="crumb"><a href="/sites">"← Sites"</a></p>
            <h1>{title.clone()}</h1>
        </div>
        <NoticeBox notice=view.notice/>
        {refused_origins}
        {snippet}
        {integrations}
        {view.key.as_deref().map(crate::site_identity::known_visitors_link)}
        {view.key.as_deref().map(crate::site_hours::business_hours_link)}
        {view.key.as_deref().map(crate::site_prechat::prechat_link)}
        <form method="post" action=action class="card stack" aria-label="Site settings">
            <CsrfField token=csrf/>
            <fieldset>
                <legend>"Site"</legend>
                <div class="field">
                    <label for="name">"Name"</label>
                    <input id="name" name="name" type="text" required maxlength="80"
                        {..field_marks(refused, "name", Some("name-hint"))} value=values.name/>
                    <p class="hint" id="name-hint">"Shown in the widget's header and to agents."</p>
                </div>
                <div class="field">
                    <label for="origins">"Allowed origins"</label>
                    <textarea id="origins" name="origins" rows="3" required class="mono"
                        {..field_marks(refused, "origins", Some("origins-hint"))}>{crate::textarea_text(&values.origins)}</textarea>
                    <p class="hint" id="origins-hint">"One per line, like https://www.example.com. \
                        Only pages on these origins can open the chat."</p>
                </div>
            </fieldset>
            <fieldset>
                <legend>"Look"</legend>
                <div class="field">
                    <label for="greeting">"Greeting"</label>
                    <textarea id="greeting" name="greeting" rows="2" maxlength="500"
                        {..field_marks(refused, "greeting", None)}>{crate::textarea_text(&values.greeting)}</textarea>
                </div>
                {language}
                <div class="field-row">
                    <div class="field">
                        <label for="color">"Colour"</label>
                        <input id="color" name="color" type="color"
                            {..field_marks(refused, "color", faint.is_some().then_some("color-hint"))}
                            value=values.color.clone()/>
                        {faint}
                    </div>
                    <div class="field">
                        <span class="label" id="position-label">"Position"</span>
                        <div class="radios" role="radiogroup" aria-labelledby="position-label">
                            <label><input type="radio" name="position" value="left" checked=is_left/>" Bottom left"</label>
                            <label><input type="radio" name="position" value="right" checked=!is_left/>" Bottom right"</label>
                        </div>
                    </div>
                </div>
            </fieldset>
            <fieldset>
                <legend>"Brakes"</legend>
                <p class="hint">"Limits that keep one visitor, or a flood, from overwhelming the team."</p>
                <div class="field-grid">
                    {number_field(("visitor_messages_per_minute", "Visitor messages per minute",
                        "Sustained rate for one visitor."), values.visitor_messages_per_minute, refused)}
                    {number_field(("visitor_burst", "Visitor burst",
                        "Messages a visitor may send at once."), values.visitor_burst, refused)}
                    {number_field(("flood_messages_per_minute", "Site messages per minute",
                        "Above this the site holds back all visitors; one address may use three quarters at most."), values.flood_messages_per_minute, refused)}
                    {number_field(("flood_conversations_per_minute", "New conversations per minute",
                        "Above this new chats wait."), values.flood_conversations_per_minute, refused)}
                </div>
            </fieldset>
            <RetentionField days=values.retention_days refused/>
            {is_edit.then(|| view! { <AttachmentField megabytes=values.attachment_max_mb refused/> })}
            <div class="form-actions">
                <button type="submit" class="button button-primary">{button}</button>
            </div>
        </form>
        {danger}
    };
    document(&title, Some(admin_nav(view.nav)), true, content.into_any())
}

/// Renders the confirmation step before deleting a site.
pub fn render_delete_site(view: DeleteSiteView) -> String {
    let csrf = view.nav.csrf.clone();
    let key = view.key;
    let content = view! {
        <section class="card card-narrow card-danger" aria-labelledby="delete-title">
            <h1 id="delete-title">"Delete “"{view.name.clone()}"”?"</h1>
            <p>"This deletes the site and its "<strong>{view.conversations}
                {if view.conversations == 1 { " conversation" } else { " conversations" }}</strong>
                " with every message. It cannot be undone. The widget stops working on the site's pages."</p>
            {view.error.clone().map(|e| view! { <p class="notice notice-error" role="alert" id=FORM_ERROR_ID>{e}</p> })}
            <form method="post" action=format!("/sites/{key}/delete") class="stack">
                <CsrfField token=csrf/>
                <div class="field">
                    <label for="confirm">"Type the site's name to confirm"</label>
                    <input id="confirm" name="confirm" type="text" required autocomplete="off"
                        {..field_marks(view.error.is_some().then_some("confirm"), "confirm", None)}/>
                </div>
                <div class="form-actions">
                    <a class="button" href=format!("/sites/{key}")>"Cancel"</a>
                    <button type="submit" class="button button-danger">"Delete site"</button>
                </div>
            </form>
        </section>
    };
    document(
        "Delete site",
        Some(admin_nav(view.nav)),
        false,
        content.into_any(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contrast_is_the_wcag_ratio() {
        assert!((contrast((0, 0, 0), (255, 255, 255)) - 21.0).abs() < 1e-9);
        assert!((contrast((0x25, 0x63, 0xeb), (255, 255, 255)) - 5.17).abs() < 0.01);
        assert_eq!(parse_hex("#2563eb"), Some((0x25, 0x63, 0xeb)));
        for not_a_colour in ["2563eb", "#abc", "#25 3eb", "#2563ebff", "#é563e"] {
            assert_eq!(parse_hex(not_a_colour), None, "{not_a_colour}");
        }
    }

    #[test]
    fn only_colours_near_white_or_near_the_dark_panel_are_warned_about() {
        for faint in [
            "#ffffff", "#f8fafc", "#fef08a", "#a3e635", "#111111", "#1a237e",
        ] {
            assert!(faint_colour_hint(faint).is_some(), "{faint}");
        }
        for clear in ["#2563eb", "#808080", "#dc2626", "#0f766e", "#7c3aed"] {
            assert!(faint_colour_hint(clear).is_none(), "{clear}");
        }
    }
}

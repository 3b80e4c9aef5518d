//! What the widget's `hello` tells about the visitor's browser (docs/widget-protocol.md): the
//! page, where they came from, their language and time zone. Shown to agents beside the
//! conversation, so every field is optional and anything malformed is dropped rather than
//! refused: a bad hint must never cost the visitor their chat.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

use super::{PrechatAnswers, VisitorIdentity};

/// Longest page or referrer URL kept, in characters.
pub const MAX_URL_CHARS: usize = 2048;
/// Longest language tag kept (BCP 47 tags in practice stay far below).
const MAX_LANGUAGE_CHARS: usize = 35;
/// Longest time zone name kept (IANA names are at most about 30 characters).
const MAX_TIME_ZONE_CHARS: usize = 64;

/// The visitor's browser as the widget describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VisitorContext {
    /// The page the visitor is on.
    pub page: Option<String>,
    /// The page that linked to it (`document.referrer`).
    pub referrer: Option<String>,
    /// The browser's language (`navigator.language`), such as `de-DE`.
    pub language: Option<String>,
    /// The browser's IANA time zone, such as `Europe/Berlin`.
    pub time_zone: Option<String>,
    /// Who the host page says the visitor is, verified or not; set once `hello` is checked.
    pub identity: Option<VisitorIdentity>,
    /// The pre-chat form's answers, sent with the visitor's first message (stored once).
    pub prechat: Option<PrechatAnswers>,
}

impl VisitorContext {
    /// Keeps what is well-formed: URLs without control characters or credentials, cut to
    /// [`MAX_URL_CHARS`], a language tag of letters, digits and `-`, a time zone name of letters, digits and `_+-/`.
    pub fn from_hello(
        page: Option<String>,
        referrer: Option<String>,
        language: Option<String>,
        time_zone: Option<String>,
    ) -> Self {
        Self {
            page: page.and_then(|p| url(&p)),
            referrer: referrer.and_then(|r| url(&r)),
            language: language.filter(|l| is_language_tag(l)),
            time_zone: time_zone.filter(|z| is_time_zone_name(z)),
            identity: None,
            prechat: None,
        }
    }
}

fn url(raw: &str) -> Option<String> {
    // Cut before cleaning, so the cleaning's work is bounded by the kept length, not by the
    // frame's (whatever is kept is cleaned all the same).
    let kept: String = raw
        .trim()
        .chars()
        .filter(|&c| super::text::is_url_char(c))
        .take(MAX_URL_CHARS)
        .collect();
    let kept: String = without_secrets(&kept).chars().take(MAX_URL_CHARS).collect();
    (!kept.is_empty()).then_some(kept)
}

/// Parameter names, or parts of them, whose values are credentials or personal data: the
/// token of a password-reset or sign-in link, an OAuth code or state, a signed URL's
/// signature, an address an email link carries.
const SECRET_WORDS: &[&str] = &[
    "auth",
    "authorization",
    "bearer",
    "code",
    "credential",
    "credentials",
    "email",
    // A signed link's digest: Shopify's `hmac`, Telegram's login `hash`.
    "hash",
    "hmac",
    "jwt",
    "jsessionid",
    "key",
    "mail",
    "nonce",
    "otp",
    "pass",
    "passcode",
    "passwd",
    "password",
    "phpsessid",
    "pin",
    "pwd",
    // A SAML sign-in's signed assertion, posted or redirected (`SAMLResponse`, `SAMLRequest`).
    "samlrequest",
    "samlresponse",
    "secret",
    "session",
    "sessionid",
    "sid",
    "sig",
    "signature",
    "state",
    "ticket",
    "token",
    "verifier",
];

/// The URL as agents may see it and Porch may keep it (docs/privacy.md#page-addresses): the
/// user name and password of `https://user:pw@host/` dropped, the value of each parameter named
/// like a credential (or holding an address that carries one) replaced by `redacted`, and the
/// fragment dropped unless it is a single-page app's route (`#/pricing`, `#!/pricing`), which is
/// cleaned the same way, to its own second `#`.
fn without_secrets(url: &str) -> String {
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((head, fragment)) => (head, Some(fragment)),
        None => (url, None),
    };
    let mut cleaned = redact_parameters(&without_user_info(before_fragment));
    if let Some(route) = fragment.filter(|f| f.starts_with('/') || f.starts_with("!/")) {
        let route = route.split('#').next().unwrap_or_default();
        cleaned.push('#');
        cleaned.push_str(&redact_parameters(route));
    }
    cleaned
}

/// `url` without the `user:password@` of its authority (`https://…` or protocol-relative
/// `//…`).
fn without_user_info(url: &str) -> String {
    let start = match url.find("://") {
        Some(at) => at + 3,
        None if url.starts_with("//") => 2,
        None => return url.to_owned(),
    };
    let rest = &url[start..];
    // Where a browser ends the authority: `\` counts as `/` in http(s) addresses (WHATWG URL).
    let authority_end = rest.find(['/', '\\', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}{}", &url[..start], &rest[at + 1..]),
        None => url.to_owned(),
    }
}

/// Where a `name=value` pair may start: a query (`?`, `&`), a path parameter
/// (`;jsessionid=…`), and in a route also its path (`#/access_token=…&state=…`, the shape of
/// an OAuth sign-in on a hash-routed app).
const PAIR_SEPARATORS: [char; 3] = ['?', '&', ';'];

/// How many addresses deep a value is read (`redirect=` an address whose `next=` is an address
/// …); a value nested deeper that is an address is redacted unread.
const MAX_NESTING: u8 = 3;

/// `text` (an address without its fragment, or a route) with its parameters redacted. A pair of
/// the query is first read whole, as a browser reads it (`&` alone ends a value, so
/// `redirect=https://x/cb?a=1%26token%3D…` is one address carrying a token); a pair that passes
/// is then read split at every separator too, as some servers read it (`a=1;token=…`).
fn redact_parameters(text: &str) -> String {
    let Some((path, query)) = text.split_once('?') else {
        return redact_split_pairs(text);
    };
    let mut out = redact_split_pairs(path);
    out.push('?');
    for piece in query.split_inclusive('&') {
        let pair = piece.strip_suffix('&').unwrap_or(piece);
        match redact_pair(pair, MAX_NESTING) {
            Cow::Owned(redacted) => out.push_str(&redacted),
            Cow::Borrowed(_) => out.push_str(&redact_split_pairs(pair)),
        }
        out.push_str(&piece[pair.len()..]);
    }
    out
}

/// `text` with each pair between [`PAIR_SEPARATORS`] redacted on its own.
fn redact_split_pairs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in text.split_inclusive(PAIR_SEPARATORS) {
        let (pair, separator) = match piece.strip_suffix(PAIR_SEPARATORS) {
            Some(pair) => (pair, &piece[pair.len()..]),
            None => (piece, ""),
        };
        out.push_str(&redact_pair(pair, MAX_NESTING));
        out.push_str(separator);
    }
    out
}

/// `pair` with its value replaced by `redacted` when its name (the part after a path's last
/// `/`, percent-decoded: `%74oken` is `token`) is a secret's, or its value is an address that
/// carries one (`redirect=https%3A%2F%2Fx%2F%3Ftoken%3D…`), read `depth` addresses deep.
fn redact_pair(pair: &str, depth: u8) -> Cow<'_, str> {
    let Some((name, value)) = pair.split_once('=') else {
        // A bare `?ann@example.com` (an unsubscribe or "verify" link) is an address all the same.
        return if is_an_email_address(pair) {
            "redacted".into()
        } else {
            pair.into()
        };
    };
    let bare = name.rsplit('/').next().unwrap_or(name);
    if names_a_secret(&percent_decode_str(bare).decode_utf8_lossy())
        || is_an_email_address(value)
        || carries_a_secret(value, depth)
    {
        format!("{name}=redacted").into()
    } else {
        pair.into()
    }
}

/// Whether a value, percent-decoded (again while that changes it), is an email address or a
/// `mailto:` one, whatever its parameter's name (`login_hint=ann@example.org`, `?e=…`,
/// `?share=mailto:…`): someone's address is theirs to give. Looser than
/// [`super::is_visitor_email`] on purpose: redacting a value that only looks like one costs
/// nothing.
fn is_an_email_address(value: &str) -> bool {
    let decoded = fully_decoded(value);
    let decoded = decoded
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case("mailto:"))
        .map_or(decoded.as_str(), |_| &decoded[7..]);
    // A list (`to=a@x.example,b@y.example`, a `mailto:` with several recipients) holds addresses.
    decoded.split(',').any(is_one_address)
}

/// Whether `text` (decoded) is one email address, by the loose rule of [`is_an_email_address`].
fn is_one_address(text: &str) -> bool {
    let decoded = text.trim();
    decoded.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty()
            && domain.contains('.')
            && !decoded.contains(|c: char| c.is_whitespace() || "/?#&:;".contains(c))
            && !domain.contains('@')
    })
}

/// `value` percent-decoded, again while that changes it (an address encoded twice), at most
/// [`MAX_NESTING`] times.
fn fully_decoded(value: &str) -> String {
    let mut decoded = value.to_owned();
    for _ in 0..MAX_NESTING {
        let once = percent_decode_str(&decoded)
            .decode_utf8_lossy()
            .into_owned();
        if once == decoded {
            break;
        }
        decoded = once;
    }
    decoded
}

/// Whether a value, percent-decoded (again while that changes it, for an address encoded
/// twice), is an address (absolute, protocol-relative, or a path) with credentials in it by the
/// same rules. At `depth` 0 an address is taken to carry one: nesting is not followed further.
fn carries_a_secret(value: &str, depth: u8) -> bool {
    let decoded = fully_decoded(value);
    if !(decoded.contains("://") || decoded.starts_with('/')) {
        return false;
    }
    depth == 0
        || without_user_info(&decoded) != decoded
        || decoded
            .split(['?', '&', ';', '#'])
            .any(|pair| matches!(redact_pair(pair, depth - 1), Cow::Owned(_)))
}

/// Endings that make a word a secret's name too, when it is written as one word
/// (`accesstoken`, `resettoken`, `SESSID`, `apikey`): none of them ends a common harmless word.
const SECRET_ENDINGS: &[&str] = &[
    "apikey",
    "passwd",
    "password",
    "secret",
    "sessid",
    "sessionid",
    "token",
];

/// Whether a parameter name, split into words at punctuation and at lower-to-upper case
/// changes (`reset_token`, `access-token`, `apiKey`, `user[email]`), has a word of
/// [`SECRET_WORDS`], or a word ending in one of [`SECRET_ENDINGS`]. Otherwise whole words only,
/// so `keyword`, `zipcode` and `page` stay.
fn names_a_secret(name: &str) -> bool {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() || (c.is_ascii_uppercase() && previous_lower) {
            words.push(std::mem::take(&mut word));
        }
        if c.is_ascii_alphanumeric() {
            word.push(c.to_ascii_lowercase());
        }
        previous_lower = c.is_ascii_lowercase();
    }
    words.push(word);
    words.iter().any(|w| {
        SECRET_WORDS.contains(&w.as_str()) || SECRET_ENDINGS.iter().any(|end| w.ends_with(end))
    })
}

fn is_language_tag(tag: &str) -> bool {
    (1..=MAX_LANGUAGE_CHARS).contains(&tag.len())
        && tag.starts_with(|c: char| c.is_ascii_alphabetic())
        && tag.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn is_time_zone_name(name: &str) -> bool {
    (1..=MAX_TIME_ZONE_CHARS).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_+-/".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context(language: &str, time_zone: &str) -> VisitorContext {
        VisitorContext::from_hello(None, None, Some(language.into()), Some(time_zone.into()))
    }

    #[test]
    fn well_formed_hints_are_kept() {
        let kept = context("pt-BR", "America/Argentina/Buenos_Aires");
        assert_eq!(kept.language.as_deref(), Some("pt-BR"));
        assert_eq!(
            kept.time_zone.as_deref(),
            Some("America/Argentina/Buenos_Aires")
        );
        assert_eq!(
            context("en", "Etc/GMT+5").time_zone.as_deref(),
            Some("Etc/GMT+5")
        );
    }

    #[test]
    fn malformed_hints_are_dropped() {
        for (language, time_zone) in [
            ("", ""),
            ("de DE", "Europe/Berlin<script>"),
            ("<b>", "/etc/passwd"),
            ("-x", "Europe/../x"),
            (&"a".repeat(36), &"A".repeat(65)),
        ] {
            let dropped = context(language, time_zone);
            assert_eq!((dropped.language, dropped.time_zone), (None, None));
        }
    }

    #[test]
    fn urls_are_cut_and_lose_control_characters() {
        let long = format!("https://example.com/{}", "a".repeat(3000));
        let kept = VisitorContext::from_hello(
            Some(long),
            Some(" https://search.example/?q=a\nb\u{202E}\u{200B} ".into()),
            None,
            None,
        );
        assert_eq!(kept.page.map(|p| p.chars().count()), Some(MAX_URL_CHARS));
        assert_eq!(
            kept.referrer.as_deref(),
            Some("https://search.example/?q=ab")
        );
        assert_eq!(
            VisitorContext::from_hello(Some("  ".into()), None, None, None).page,
            None
        );
    }

    fn page(url: &str) -> Option<String> {
        VisitorContext::from_hello(Some(url.into()), None, None, None).page
    }

    #[test]
    fn an_address_nested_without_end_is_cut_and_cleaned_in_bounded_work() {
        // Each `/=` a level deeper: read without a bound, 16 KB overflowed a worker's stack.
        let deep = format!("https://a.example/?r={}", "/=".repeat(32 * 1024));
        let kept = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || page(&deep))
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        assert_eq!(kept.as_deref(), Some("https://a.example/?r=redacted"));
    }

    #[test]
    fn values_and_names_are_read_as_browsers_and_servers_read_them() {
        for (sent, kept) in [
            // An address in a value with only its own `&` encoded, as a browser reads it, and a
            // `;` or a second `?` inside a value, as some servers read them.
            (
                "https://a.example/login?redirect=https://b.example/cb?x=1%26token%3DS16&lang=de",
                "https://a.example/login?redirect=redacted&lang=de",
            ),
            (
                "https://a.example/?a=1;token=S17&b=2?code=S18",
                "https://a.example/?a=1;token=redacted&b=2?code=redacted",
            ),
            // Signed links' digests, a SAML assertion, a PIN or bearer value, and an email
            // address under any name (an outside check found these kept as sent).
            (
                "https://a.example/app?shop=s.example&hmac=H1&hash=H2&pin=1234&bearer=B1&SAMLResponse=PD94&id=7",
                "https://a.example/app?shop=s.example&hmac=redacted&hash=redacted&pin=redacted&bearer=redacted&SAMLResponse=redacted&id=7",
            ),
            (
                "https://a.example/?login_hint=ann%40example.org&e=bo@example.com&user=cy@x.example&at=@home&next=%2Fa%40b&s=mailto:di@x.example&t=MAILTO%3Aed%40x.example&u=fi%2540x.example&to=go@x.example,hu@y.example&tags=a,b",
                "https://a.example/?login_hint=redacted&e=redacted&user=redacted&at=@home&next=%2Fa%40b&s=redacted&t=redacted&u=redacted&to=redacted&tags=a,b",
            ),
            (
                "https://a.example/unsubscribe?ann@example.com",
                "https://a.example/unsubscribe?redacted",
            ),
            // Names written as one word, ending in a secret's word.
            (
                "https://a.example/?accesstoken=T3&resetToken=T4&SESSID=S19&apikey=K1&passcode=P1&authorization=A1&oauth_verifier=V1&topic=x",
                "https://a.example/?accesstoken=redacted&resetToken=redacted&SESSID=redacted&apikey=redacted&passcode=redacted&authorization=redacted&oauth_verifier=redacted&topic=x",
            ),
        ] {
            assert_eq!(page(sent).as_deref(), Some(kept), "{sent}");
        }
    }

    #[test]
    fn credentials_in_urls_are_not_kept() {
        for (sent, kept) in [
            (
                "https://shop.example/reset?token=abc123&lang=de",
                "https://shop.example/reset?token=redacted&lang=de",
            ),
            (
                "https://ann:hunter2@shop.example/a?x=1",
                "https://shop.example/a?x=1",
            ),
            (
                "https://shop.example/cb?code=q&state=s&utm_source=mail",
                "https://shop.example/cb?code=redacted&state=redacted&utm_source=mail",
            ),
            (
                "https://shop.example/?apiKey=k&reset-token=t&user[email]=a%40b.c",
                "https://shop.example/?apiKey=redacted&reset-token=redacted&user[email]=redacted",
            ),
            (
                "https://shop.example/a#access_token=t&id_token=u",
                "https://shop.example/a",
            ),
            (
                "https://shop.example/#/invite?ticket=t&ref=x",
                "https://shop.example/#/invite?ticket=redacted&ref=x",
            ),
            (
                "https://shop.example/s?keyword=shoes&zipcode=10115&page=2#!/cart",
                "https://shop.example/s?keyword=shoes&zipcode=10115&page=2#!/cart",
            ),
            ("https://a.example/@ann?q=1", "https://a.example/@ann?q=1"),
            // A browser reads `\` as `/` in an http(s) address: the host is `a.example`, so the
            // `@` is in the path and nothing before it is a user name.
            (
                r"https://a.example\@evil.example/",
                r"https://a.example\@evil.example/",
            ),
            // An OAuth sign-in on a hash-routed app, and a route's own fragment.
            (
                "https://a.example/#/access_token=T1&token_type=Bearer&state=S1",
                "https://a.example/#/access_token=redacted&token_type=redacted&state=redacted",
            ),
            (
                "https://a.example/app#!/cb&code=C1",
                "https://a.example/app#!/cb&code=redacted",
            ),
            (
                "https://a.example/p#/route#access_token=T2",
                "https://a.example/p#/route",
            ),
            // Encoded names, path parameters, more words, and addresses inside values.
            (
                "https://a.example/?%74oken=E1",
                "https://a.example/?%74oken=redacted",
            ),
            (
                "https://a.example/p;jsessionid=J1?x=1",
                "https://a.example/p;jsessionid=redacted?x=1",
            ),
            (
                "https://a.example/?e-mail=a%40b.c&mail=d%40e.f&PHPSESSID=P",
                "https://a.example/?e-mail=redacted&mail=redacted&PHPSESSID=redacted",
            ),
            (
                "https://a.example/?redirect=https%3A%2F%2Fx.test%2F%3Ftoken%3DN1&next=%2Fdocs%23install",
                "https://a.example/?redirect=redacted&next=%2Fdocs%23install",
            ),
            (
                "https://a.example/?r=%2Fa%3Fnext%3D%252Fb%253Fcode%253DN2",
                "https://a.example/?r=redacted",
            ),
            (
                "https://a.example/?back=https%3A%2F%2Fu%3Apw%40x.test%2F",
                "https://a.example/?back=redacted",
            ),
            (
                "https://a.example/search?q=email+marketing&page=2",
                "https://a.example/search?q=email+marketing&page=2",
            ),
            // Encoded twice, and protocol-relative with a user and password.
            (
                "https://a.example/?r=https%253A%252F%252Fx.test%252F%253Ftoken%253DN1",
                "https://a.example/?r=redacted",
            ),
            (
                "https://a.example/?back=%2F%2Fu%3Apw%40x.test%2F",
                "https://a.example/?back=redacted",
            ),
        ] {
            assert_eq!(page(sent).as_deref(), Some(kept), "{sent}");
        }
        let referrer = VisitorContext::from_hello(
            None,
            Some("https://mail.example/open?session=s".into()),
            None,
            None,
        )
        .referrer;
        assert_eq!(
            referrer.as_deref(),
            Some("https://mail.example/open?session=redacted")
        );
    }
}

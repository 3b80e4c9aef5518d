//! Known visitors (docs/widget.md#known-visitors): the `identity` of `hello`, checked against the
//! site's identity secret. A verified user is found by a key derived from the site and their id,
//! not by the browser's token, so every browser that proves the same user reaches the same
//! history; an unverified claim only labels the token's own visitor.

use axum::http::HeaderValue;
use hmac::{Hmac, Mac};
use percent_encoding::percent_decode;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::chat::{Site, hash_token, open_identity_secret};
use crate::secrets::SecretKey;
use crate::values::VisitorIdentity;

/// A user id as sites send it: text, or a JSON number (taken as its decimal text).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum ClaimedId {
    Text(String),
    Number(serde_json::Number),
}

impl ClaimedId {
    /// The id as the text its `user_hash` is made of. A number is any whole JSON number, as the
    /// protocol's integers are (`42`, `42.0` and `4.2e1` are all "42", as `JSON.stringify` and
    /// most servers write them); one with a fraction is no id.
    fn text(&self) -> Option<String> {
        match self {
            Self::Text(text) => Some(text.clone()),
            Self::Number(n) if !n.is_f64() => Some(n.to_string()),
            // Adding 0.0 makes -0.0 plain 0; a whole f64 prints exactly with no decimals.
            Self::Number(n) => n
                .as_f64()
                .filter(|f| f.is_finite() && f.fract() == 0.0)
                .map(|f| format!("{:.0}", f + 0.0)),
        }
    }
}

/// `hello.identity` as sent.
#[derive(Debug, Deserialize)]
pub struct IdentityClaim {
    id: ClaimedId,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    user_hash: Option<String>,
}

/// The `token_hash` the visitor is stored under: a verified user's is [`user_token_hash`] (the
/// same on every browser); everyone else's is the token's own hash, whatever they claim.
pub fn visitor_hash(site_key: &str, identity: Option<&VisitorIdentity>, token: &str) -> [u8; 32] {
    identity
        .and_then(|known| verified_key(site_key, known))
        .unwrap_or_else(|| hash_token(token))
}

/// A verified user's [`user_token_hash`]; `None` for an unverified claim.
fn verified_key(site_key: &str, identity: &VisitorIdentity) -> Option<[u8; 32]> {
    identity
        .is_verified
        .then(|| user_token_hash(site_key, &identity.user_id))
}

/// The key of the verified user a file request proves (docs/widget-protocol.md, "Attachments"):
/// its `X-Porch-Identity` header is `hello.identity` as JSON, percent-encoded (as
/// `encodeURIComponent` writes it, so any user id fits in a header). `None` when the header is
/// absent, unreadable or not verified: the request is then the browser token's alone, as a
/// `hello` with such an identity would be.
pub fn verified_user_key(
    header: Option<&HeaderValue>,
    site: &Site,
    key: &SecretKey,
) -> Option<[u8; 32]> {
    let claim = claim_from_header(header?.as_bytes())?;
    verified_key(&site.key, &resolve_identity(&claim, site, key)?)
}

/// The identity a percent-encoded JSON header value names; `None` if it is not one.
fn claim_from_header(value: &[u8]) -> Option<IdentityClaim> {
    let text = percent_decode(value).decode_utf8().ok()?;
    serde_json::from_str(&text).ok()
}

/// Reads `hello.identity` leniently: a claim of the wrong shape (no `id`, a number for a name)
/// is ignored, the visitor then being anonymous, so a site's mistake never costs the chat.
///
/// # Errors
/// Only if the frame is not JSON at all, which the frame's own parse has refused already.
pub fn deserialize_claim<'de, D>(deserializer: D) -> Result<Option<IdentityClaim>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let value = serde_json::Value::deserialize(deserializer)?;
    Ok(serde_json::from_value(value).ok())
}

/// What the claim amounts to for this site: `None` for an id that does not parse, verified when
/// the site has a secret and `user_hash` is the HMAC-SHA256 of the id under it.
pub fn resolve_identity(
    claim: &IdentityClaim,
    site: &Site,
    key: &SecretKey,
) -> Option<VisitorIdentity> {
    let id = claim.id.text()?;
    let identity = VisitorIdentity::parse(&id, claim.name.as_deref(), claim.email.as_deref())?;
    let secret = site.identity_secret.as_ref().and_then(|sealed| {
        open_identity_secret(key, site.id, sealed)
            .inspect_err(
                |err| tracing::warn!(site = %site.id, %err, "identity secret does not open"),
            )
            .ok()
    });
    let is_verified = match (secret, claim.user_hash.as_deref()) {
        (Some(secret), Some(hash)) => hash_matches(&secret, &identity.user_id, hash),
        _ => false,
    };
    Some(if is_verified {
        identity.verified()
    } else {
        identity
    })
}

/// True if `user_hash` (hex) is the HMAC-SHA256 of `user_id` keyed with the secret's text. The
/// comparison is `Mac::verify_slice`, constant-time, so the time taken says nothing about how
/// much of a guess was right.
fn hash_matches(secret: &str, user_id: &str, user_hash: &str) -> bool {
    let Ok(given) = hex::decode(user_hash.trim()) else {
        return false;
    };
    let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(user_id.as_bytes());
    mac.verify_slice(&given).is_ok()
}

/// The `token_hash` a verified user's visitor row is stored under. No visitor token hashes to
/// it (that would take a SHA-256 preimage), so only a valid `user_hash` reaches that history.
fn user_token_hash(site_key: &str, user_id: &str) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(b"porch-user\0");
    hasher.update(site_key.as_bytes());
    hasher.update(b"\0");
    hasher.update(user_id.as_bytes());
    hasher.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference_hash(secret: &str, id: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("key");
        mac.update(id.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    #[test]
    fn the_documented_example_hash_matches() {
        // The example in docs/widget.md#known-visitors.
        let secret = "9f2c4e6a8b0d1f3e5a7c9e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f1a3c5e7b9d2f";
        let hash = reference_hash(secret, "42");
        assert_eq!(
            hash,
            "95a262d3379ef0eaac43b2c04528c963b73c47b87a8a20813a25ec87bfb4155b"
        );
        assert!(hash_matches(secret, "42", &hash));
        assert!(hash_matches(secret, "42", &hash.to_uppercase()));
        assert!(!hash_matches(secret, "43", &hash));
        assert!(!hash_matches("other", "42", &hash));
        assert!(!hash_matches(secret, "42", &hash[..62]));
        assert!(!hash_matches(secret, "42", "not hex"));
        assert!(!hash_matches(secret, "42", ""));
    }

    #[test]
    fn the_hash_is_compared_in_constant_time() {
        // Guards the choice above: a plain `==` on strings or bytes would stop at the first
        // difference. The check must go through the MAC's own constant-time comparison.
        let source = include_str!("identity.rs");
        let body = source
            .split("fn hash_matches")
            .nth(1)
            .and_then(|rest| rest.split("\n}\n").next())
            .expect("hash_matches is here");
        assert!(body.contains("verify_slice("), "{body}");
        assert!(!body.contains("=="), "{body}");
    }

    #[test]
    fn a_numeric_id_is_any_whole_number_as_its_decimal_text() {
        let text = |raw: &str| {
            let json = format!(r#"{{"id":{raw}}}"#);
            serde_json::from_str::<IdentityClaim>(&json)
                .expect("a claim")
                .id
                .text()
        };
        for (raw, id) in [
            ("42", "42"),
            ("42.0", "42"),
            ("4.2e1", "42"),
            ("-7", "-7"),
            ("-0.0", "0"),
            ("18446744073709551615", "18446744073709551615"),
            ("1e20", "100000000000000000000"),
        ] {
            assert_eq!(text(raw).as_deref(), Some(id), "{raw}");
        }
        assert_eq!(text("42.5"), None);
        assert_eq!(
            text(r#""42.0""#).as_deref(),
            Some("42.0"),
            "text is taken as it is"
        );
    }

    #[test]
    fn the_documented_header_names_its_user_and_anything_else_names_none() {
        // The example of docs/widget-protocol.md, "Known visitors' files".
        let example = "%7B%22id%22%3A%2242%22%2C%22user_hash%22%3A%2295a262d3379ef0eaac43b2c04528\
                       c963b73c47b87a8a20813a25ec87bfb4155b%22%7D";
        let claim = claim_from_header(example.as_bytes()).expect("a claim");
        assert!(matches!(&claim.id, ClaimedId::Text(id) if id == "42"));
        assert_eq!(
            claim.user_hash.as_deref(),
            Some("95a262d3379ef0eaac43b2c04528c963b73c47b87a8a20813a25ec87bfb4155b")
        );
        let number = claim_from_header(b"%7B%22id%22%3A42%7D").expect("a number id");
        assert_eq!(number.id.text().as_deref(), Some("42"));
        for unreadable in [
            &b"%22just%20text%22"[..],
            b"%7B%22name%22%3A1%7D",
            b"%FF%FE",
            b"",
        ] {
            assert!(claim_from_header(unreadable).is_none(), "{unreadable:?}");
        }
    }

    #[test]
    fn users_keys_differ_by_site_and_id() {
        assert_ne!(user_token_hash("s_a", "1"), user_token_hash("s_b", "1"));
        assert_ne!(user_token_hash("s_a", "1"), user_token_hash("s_a", "2"));
        assert_eq!(user_token_hash("s_a", "1"), user_token_hash("s_a", "1"));
    }
}

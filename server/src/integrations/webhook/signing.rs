//! An endpoint's settings and the Standard Webhooks v1 signature: `whsec_` secrets, HMAC-SHA256
//! over `id.timestamp.body`, and rotation with an overlap during which both secrets sign.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// How long the previous secret keeps signing after a rotation, so receivers can switch over.
pub const ROTATION_OVERLAP_MS: i64 = 24 * 3600 * 1000;

/// An endpoint's non-secret settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct WebhookConfig {
    pub url: String,
    pub events: Vec<String>,
}

/// An endpoint's signing secrets (`whsec_…`). `Debug` never prints them.
#[derive(Clone, Serialize, Deserialize)]
pub struct WebhookSecrets {
    pub secret: String,
    /// The secret before the last rotation, still used to sign until `previous_until`.
    #[serde(default)]
    pub previous: Option<String>,
    #[serde(default)]
    pub previous_until: Option<i64>,
}

impl std::fmt::Debug for WebhookSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSecrets")
            .field("secret", &"<redacted>")
            .field("previous", &self.previous.as_ref().map(|_| "<redacted>"))
            .field("previous_until", &self.previous_until)
            .finish()
    }
}

impl WebhookSecrets {
    /// The secrets to sign with at `now`: the current one, and the previous one during the
    /// overlap after a rotation.
    pub fn signing(&self, now: i64) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let (Some(previous), Some(until)) = (&self.previous, self.previous_until)
            && now < until
        {
            secrets.push(previous);
        }
        secrets
    }

    /// A rotation: a fresh secret, the current one kept for the overlap.
    #[must_use]
    pub fn rotated(&self, now: i64) -> Self {
        Self {
            secret: new_secret(),
            previous: Some(self.secret.clone()),
            previous_until: Some(now + ROTATION_OVERLAP_MS),
        }
    }
}

/// A new signing secret: 32 random bytes, shown as `whsec_` + base64.
pub fn new_secret() -> String {
    format!("whsec_{}", STANDARD.encode(rand::random::<[u8; 32]>()))
}

/// `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` with the key inside `whsec_<base64>`;
/// `None` if the secret is not of that form.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .ok()?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).ok()?;
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Some(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

/// The `webhook-signature` header: one signature per secret, space-separated.
pub fn signature_header(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let signatures: Option<Vec<String>> = secrets
        .iter()
        .map(|secret| sign(secret, id, timestamp, body))
        .collect();
    Some(signatures?.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_matches_the_standard_webhooks_example() {
        // The example in the Standard Webhooks specification.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1_614_265_330, body).as_deref(),
            Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        );
    }

    #[test]
    fn rotation_signs_with_both_secrets_during_the_overlap() {
        let first = WebhookSecrets {
            secret: new_secret(),
            previous: None,
            previous_until: None,
        };
        let rotated = first.rotated(1000);
        assert_eq!(rotated.signing(1000).len(), 2);
        assert_eq!(rotated.signing(1000)[1], first.secret);
        assert_eq!(rotated.signing(1000 + ROTATION_OVERLAP_MS).len(), 1);
        let header = signature_header(&rotated.signing(1000), "msg_1", 5, b"{}").expect("sign");
        assert_eq!(header.split(' ').count(), 2);
    }
}

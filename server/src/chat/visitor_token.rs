//! Visitor tokens: `vt1.<random>.<mac>`, where the MAC binds the random part to the site with the
//! install's secret. Only tokens this server issued are accepted, without a database read; the
//! database keeps only the SHA-256 of a token.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

const PREFIX: &str = "vt1.";
/// 16 bytes of MAC are plenty against forgery and keep the token short.
const MAC_LEN: usize = 16;

/// Issues and checks visitor tokens with the install's secret.
#[derive(Clone)]
pub struct VisitorTokens {
    secret: Vec<u8>,
}

impl std::fmt::Debug for VisitorTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VisitorTokens(..)")
    }
}

impl VisitorTokens {
    pub fn new(secret: Vec<u8>) -> Self {
        Self { secret }
    }

    fn mac(&self, site_key: &str, random: &str) -> Hmac<Sha256> {
        // HMAC accepts keys of any length; new_from_slice cannot fail for it.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(site_key.as_bytes());
        mac.update(b".");
        mac.update(random.as_bytes());
        mac
    }

    /// A new token for a visitor of `site_key`.
    pub fn issue(&self, site_key: &str) -> String {
        let random = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 16]>());
        let tag = self.mac(site_key, &random).finalize().into_bytes();
        format!(
            "{PREFIX}{random}.{}",
            URL_SAFE_NO_PAD.encode(&tag[..MAC_LEN])
        )
    }

    /// True if this server issued `token` for `site_key` (constant-time MAC check).
    pub fn verify(&self, site_key: &str, token: &str) -> bool {
        let Some((random, tag)) = token.strip_prefix(PREFIX).and_then(|t| t.split_once('.')) else {
            return false;
        };
        let Ok(tag) = URL_SAFE_NO_PAD.decode(tag) else {
            return false;
        };
        tag.len() == MAC_LEN
            && self
                .mac(site_key, random)
                .verify_truncated_left(&tag)
                .is_ok()
    }
}

/// What the database stores for a token.
pub fn hash_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issued_tokens_verify_only_for_their_site_and_secret() {
        let tokens = VisitorTokens::new(vec![7; 32]);
        let token = tokens.issue("s_a");
        assert!(tokens.verify("s_a", &token));
        assert!(!tokens.verify("s_b", &token));
        assert!(!VisitorTokens::new(vec![8; 32]).verify("s_a", &token));
        assert!(!tokens.verify("s_a", &format!("{token}x")));
        assert!(!tokens.verify("s_a", "vt1.abc.def"));
        assert!(!tokens.verify("s_a", "nonsense"));
    }
}

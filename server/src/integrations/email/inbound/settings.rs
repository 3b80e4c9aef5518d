//! The mailbox the reader polls, from `PORCH_IMAP_URL` (install-wide, like `PORCH_SMTP_URL`):
//! `imaps://user:password@host[:993][/folder]` (implicit TLS) or `imap://…[:143]` (no TLS, for a
//! server on the same host). User, password and folder are URL-encoded.

use std::fmt;
use std::time::Duration;

/// Where and how to read replies. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct ImapSettings {
    pub host: String,
    pub port: u16,
    /// Implicit TLS (`imaps://`); otherwise the connection is in clear.
    pub tls: bool,
    pub user: String,
    pub(super) password: String,
    /// The folder replies arrive in (`INBOX` unless the URL names one).
    pub folder: String,
    /// How long the reader waits between rounds.
    pub poll: Duration,
}

impl fmt::Debug for ImapSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImapSettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("user", &self.user)
            .field("folder", &self.folder)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

impl ImapSettings {
    /// Parses `PORCH_IMAP_URL`.
    ///
    /// # Errors
    /// What is wrong, never quoting the URL (it holds the password).
    pub fn parse(url: &str, poll: Duration) -> Result<Self, String> {
        let url = reqwest::Url::parse(url).map_err(|_| "not a URL".to_owned())?;
        let (tls, default_port) = match url.scheme() {
            "imaps" => (true, 993),
            "imap" => (false, 143),
            _ => return Err("the scheme must be imaps:// or imap://".into()),
        };
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or("no host")?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let user = percent_decode(url.username())?;
        let password = percent_decode(url.password().unwrap_or_default())?;
        if user.is_empty() || password.is_empty() {
            return Err(
                "a user name and a password are required (imaps://user:password@host)".into(),
            );
        }
        let folder = percent_decode(url.path().trim_start_matches('/'))?;
        Ok(Self {
            host,
            port: url.port().unwrap_or(default_port),
            tls,
            user,
            password,
            folder: if folder.is_empty() {
                "INBOX".into()
            } else {
                folder
            },
            poll,
        })
    }
}

/// Decodes `%XX` escapes (a `+` stays a plus: this is a URL's user info, not a form).
fn percent_decode(raw: &str) -> Result<String, String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = raw.get(i + 1..i + 3).ok_or("a broken %-escape")?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| "a broken %-escape")?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "a %-escape that is not UTF-8".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imaps_url_with_encoded_password_and_folder() {
        let s = ImapSettings::parse(
            "imaps://me%40example.com:p%2Bss%20w@imap.example.com/Porch%20Replies",
            Duration::from_mins(1),
        )
        .expect("parsed");
        assert_eq!(
            (
                s.host.as_str(),
                s.port,
                s.tls,
                s.user.as_str(),
                s.password.as_str()
            ),
            ("imap.example.com", 993, true, "me@example.com", "p+ss w")
        );
        assert_eq!(s.folder, "Porch Replies");
        assert!(!format!("{s:?}").contains("p+ss"));
    }

    #[test]
    fn plain_imap_defaults_to_inbox_and_port_143() {
        let s = ImapSettings::parse("imap://u:p@127.0.0.1", Duration::from_secs(5)).expect("ok");
        assert_eq!((s.port, s.tls, s.folder.as_str()), (143, false, "INBOX"));
    }

    #[test]
    fn bad_urls_are_refused_without_quoting_them() {
        for url in [
            "smtp://u:p@h",
            "imaps://h",
            "imaps://u@h",
            "nonsense",
            "imaps://u:%zz@h",
        ] {
            let err = ImapSettings::parse(url, Duration::from_secs(5)).expect_err(url);
            assert!(!err.contains(url), "{err}");
        }
    }
}

//! The IMAP reader: every poll interval (or at once when an admin asks), it logs in, takes the
//! folder's unseen mails oldest first, judges each, posts or records it, and only then marks it
//! seen, so a crash in between re-reads a mail that the `mail_inbound` record then skips. Its
//! mailbox comes from `PORCH_IMAP_URL` (fixed) or the email page (replaced when an admin saves).

use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use async_imap::Session;
use async_imap::types::Fetch;
use futures_util::StreamExt as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_util::sync::CancellationToken;

use super::mailbox::{Reach, resolve_mailbox};
use super::reply::{MAX_MAIL_BYTES, Verdict, judge, parse_mail, record};
use super::settings::ImapSettings;
use crate::chat::Chat;
use crate::clock::now_ms;
use crate::integrations::email::Mailer;
use crate::store::{self, MailOutcome, Readers};

/// At most this many mails per round, so one round stays short; the rest come next round.
const ROUND_MAILS: usize = 50;
/// A round (connect, log in, read, mark) that takes longer is abandoned and counted as failing.
const ROUND_LIMIT: Duration = Duration::from_mins(2);
/// An admin's connection test waits this long at most.
const TEST_LIMIT: Duration = Duration::from_secs(10);
/// How often a reader with no mailbox wakes up anyway (it is woken when one is saved).
const IDLE_WAIT: Duration = Duration::from_mins(1);
/// Inbound mail records are kept this long (30 days).
const KEEP_RECORDS_MS: i64 = 30 * 24 * 3600 * 1000;

/// The reader's state, as the email page shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReaderHealth {
    /// When the last round ended (ms), if one has.
    pub checked_at: Option<i64>,
    /// The last round's error, `None` when it succeeded.
    pub error: Option<String>,
    /// Mails the last successful round took from the mailbox.
    pub last_round_mails: usize,
}

/// Where the reader's mailbox comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailboxSource {
    /// `PORCH_IMAP_URL`: it wins, the page cannot change it.
    Environment,
    /// The email page (or nothing set yet).
    Page,
}

/// The outcome of an admin's "Test connection", as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MailboxTest {
    pub at: i64,
    pub outcome: Result<(), String>,
}

/// Reads visitors' replies from one IMAP mailbox into their conversations.
pub struct MailReader {
    settings: RwLock<Option<ImapSettings>>,
    source: MailboxSource,
    /// Where the mailbox's server may be (`mailbox::resolve_mailbox`).
    reach: Reach,
    last_test: Mutex<Option<MailboxTest>>,
    /// Set while a connection test runs: clicks while it does start no more logins.
    testing: AtomicBool,
    chat: Chat,
    readers: Arc<Readers>,
    /// Right-hand side of Porch's `Message-ID`s (`PORCH_MAIL_FROM`'s domain).
    domain: String,
    /// The mailer's: whether a mailbox is set, so mails may invite an answer.
    reads_replies: Arc<AtomicBool>,
    health: Mutex<ReaderHealth>,
    /// Set by "Check now": the next round starts at once.
    wake: Notify,
}

impl MailReader {
    /// A reader of `settings` from `source` for the answers to `mailer`'s mails;
    /// `allow_private` is `PORCH_ALLOW_PRIVATE_NETWORKS` (a mailbox set on the page must
    /// otherwise be on a public address).
    pub fn new(
        settings: Option<ImapSettings>,
        source: MailboxSource,
        allow_private: bool,
        (chat, readers): (Chat, Arc<Readers>),
        mailer: &Mailer,
    ) -> Self {
        let reads_replies = mailer.replies_flag();
        reads_replies.store(settings.is_some(), Ordering::Relaxed);
        Self {
            settings: RwLock::new(settings),
            source,
            reach: match source {
                MailboxSource::Page => Reach::Page { allow_private },
                MailboxSource::Environment => Reach::Anywhere,
            },
            last_test: Mutex::new(None),
            testing: AtomicBool::new(false),
            chat,
            readers,
            domain: mailer.domain().to_owned(),
            reads_replies,
            health: Mutex::new(ReaderHealth::default()),
            wake: Notify::new(),
        }
    }

    /// The mailbox (the page shows it without the password), if one is set.
    pub fn settings(&self) -> Option<ImapSettings> {
        self.settings.read().ok().and_then(|s| s.clone())
    }

    /// Where the mailbox comes from.
    pub fn source(&self) -> MailboxSource {
        self.source
    }

    /// Where the mailbox's server may be.
    pub fn reach(&self) -> Reach {
        self.reach
    }

    /// Reads from `settings` from now on (the page saved or removed its mailbox): the health
    /// starts over and a round starts at once.
    pub fn replace(&self, settings: Option<ImapSettings>) {
        self.reads_replies
            .store(settings.is_some(), Ordering::Relaxed);
        if let Ok(mut current) = self.settings.write() {
            *current = settings;
        }
        if let Ok(mut health) = self.health.lock() {
            *health = ReaderHealth::default();
        }
        if let Ok(mut test) = self.last_test.lock() {
            *test = None;
        }
        self.check_now();
    }

    /// Logs in and opens the folder, reading nothing (the page's "Test connection"); the
    /// outcome is kept for the page.
    pub async fn test(&self) -> Result<(), String> {
        if self.testing.swap(true, Ordering::AcqRel) {
            return Err("a test of the mailbox is already running: wait for its outcome".into());
        }
        let _running = Running(&self.testing);
        let settings = self.settings();
        let outcome = match &settings {
            None => Err("no mailbox is set".to_owned()),
            Some(settings) => tokio::time::timeout(TEST_LIMIT, self.round(settings, false))
                .await
                .unwrap_or_else(|_| Err("the IMAP server did not answer in time".into()))
                .map(|_| ()),
        };
        // Saved anew while the test ran: its outcome is the old mailbox's, not for the card.
        if self.settings() == settings
            && let Ok(mut test) = self.last_test.lock()
        {
            *test = Some(MailboxTest {
                at: now_ms(),
                outcome: outcome.clone(),
            });
        }
        outcome
    }

    /// The last connection test since the mailbox was last set.
    pub fn last_test(&self) -> Option<MailboxTest> {
        self.last_test.lock().ok().and_then(|t| t.clone())
    }

    /// The last round's outcome.
    pub fn health(&self) -> ReaderHealth {
        self.health.lock().map(|h| h.clone()).unwrap_or_default()
    }

    /// Starts a round now instead of at the next interval.
    pub fn check_now(&self) {
        self.wake.notify_one();
    }

    /// Runs rounds until shutdown.
    pub fn spawn(self: Arc<Self>, shutdown: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let wait = match self.settings() {
                    Some(settings) => {
                        self.round_and_record(&settings).await;
                        settings.poll
                    }
                    None => IDLE_WAIT,
                };
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = self.wake.notified() => {}
                    () = shutdown.cancelled() => break,
                }
            }
        })
    }

    /// One round, its outcome kept as the reader's health.
    async fn round_and_record(&self, settings: &ImapSettings) {
        let outcome = tokio::time::timeout(ROUND_LIMIT, self.round(settings, true))
            .await
            .unwrap_or_else(|_| Err("the IMAP server did not finish in time".into()));
        if let Err(error) = &outcome {
            // The error never holds the password: only the server's words and ours.
            tracing::warn!(%error, "reading mail replies failed");
        }
        if self.settings().as_ref() != Some(settings) {
            // Saved anew while this round ran: its outcome is the old mailbox's.
            return;
        }
        if let Ok(mut health) = self.health.lock() {
            health.checked_at = Some(now_ms());
            match outcome {
                Ok(mails) => {
                    health.error = None;
                    health.last_round_mails = mails;
                }
                Err(error) => health.error = Some(error),
            }
        }
    }

    /// One round (or, without `read`, a login and a look at the folder only); returns how many
    /// mails it took.
    async fn round(&self, settings: &ImapSettings, read: bool) -> Result<usize, String> {
        if read {
            let cutoff = now_ms() - KEEP_RECORDS_MS;
            self.chat
                .forget_inbound_mail_before(cutoff)
                .await
                .map_err(|err| format!("database: {err}"))?;
        }
        let addrs = resolve_mailbox(settings, self.reach).await?;
        let tcp = TcpStream::connect(&addrs[..]).await.map_err(|err| {
            format!(
                "cannot connect to {}:{}: {err}",
                settings.host, settings.port
            )
        })?;
        if settings.tls {
            let name = ServerName::try_from(settings.host.clone())
                .map_err(|err| format!("not a server name: {err}"))?;
            let tls = tls_connector()?
                .connect(name, tcp)
                .await
                .map_err(|err| format!("TLS with {}: {err}", settings.host))?;
            self.session(tls, settings, read).await
        } else {
            self.session(tcp, settings, read).await
        }
    }

    async fn session<S>(
        &self,
        stream: S,
        settings: &ImapSettings,
        read: bool,
    ) -> Result<usize, String>
    where
        S: AsyncRead + AsyncWrite + Unpin + Debug + Send,
    {
        let mut client = async_imap::Client::new(stream);
        client
            .read_response()
            .await
            .map_err(|err| format!("IMAP greeting: {err}"))?
            .ok_or("the IMAP server closed the connection before its greeting")?;
        let mut session = client
            .login(&settings.user, &settings.password)
            .await
            .map_err(|(err, _)| {
                format!("the IMAP server refused the login: {}", server_said(&err))
            })?;
        let folder = &settings.folder;
        session
            .select(folder)
            .await
            .map_err(|err| format!("cannot open the folder {folder}: {}", server_said(&err)))?;
        if !read {
            let _ = session.logout().await;
            return Ok(0);
        }
        let mut uids: Vec<u32> = session
            .uid_search("UNSEEN")
            .await
            .map_err(|err| format!("IMAP SEARCH: {}", server_said(&err)))?
            .into_iter()
            .collect();
        uids.sort_unstable();
        uids.truncate(ROUND_MAILS);
        for &uid in &uids {
            self.take(&mut session, uid).await?;
            let mut marked = session
                .uid_store(uid.to_string(), "+FLAGS.SILENT (\\Seen)")
                .await
                .map_err(|err| format!("IMAP STORE: {}", server_said(&err)))?;
            while let Some(answer) = marked.next().await {
                answer.map_err(|err| format!("IMAP STORE: {}", server_said(&err)))?;
            }
        }
        // The mails are handled; a failed goodbye changes nothing.
        let _ = session.logout().await;
        Ok(uids.len())
    }

    /// Downloads, judges and posts or records one mail. An error (the database or the
    /// connection failing) leaves it unseen for the next round.
    async fn take<S>(&self, session: &mut Session<S>, uid: u32) -> Result<(), String>
    where
        S: AsyncRead + AsyncWrite + Unpin + Debug + Send,
    {
        let size = fetch_one(session, uid, "RFC822.SIZE")
            .await?
            .and_then(|f| f.size)
            .unwrap_or(0);
        let is_oversize = size > MAX_MAIL_BYTES;
        let query = if is_oversize {
            "BODY.PEEK[HEADER]"
        } else {
            "BODY.PEEK[]"
        };
        let Some(fetched) = fetch_one(session, uid, query).await? else {
            // Expunged meanwhile: nothing to read.
            return Ok(());
        };
        let raw = if is_oversize {
            fetched.header()
        } else {
            fetched.body()
        };
        let now = now_ms();
        let mail = match parse_mail(raw.unwrap_or_default(), &self.domain) {
            Ok(mail) => mail,
            Err(reason) => {
                let raw = raw.unwrap_or_default();
                let row = super::reply::unreadable(raw, &reason, now);
                return self.keep(row).await;
            }
        };
        if is_oversize {
            let reason =
                format!("too large ({size} bytes; the limit is {MAX_MAIL_BYTES}): not downloaded");
            return self
                .keep(record(&mail, MailOutcome::Skipped, reason, now))
                .await;
        }
        let tokens = mail.tokens.clone();
        let thread = self
            .readers
            .read(move |c| {
                for token in &tokens {
                    if let Some(thread) = store::find_mail_thread(c, token)? {
                        return Ok(Some(thread));
                    }
                }
                Ok(None)
            })
            .await
            .map_err(|err| format!("database: {err}"))?;
        match judge(&mail, thread, now) {
            Verdict::Post(reply) => {
                self.chat
                    .post_mail_reply(*reply)
                    .await
                    .map_err(|err| format!("database: {err}"))?;
                Ok(())
            }
            Verdict::Record(row) => self.keep(row).await,
        }
    }

    async fn keep(&self, row: store::InboundMailRow) -> Result<(), String> {
        self.chat
            .record_inbound_mail(row)
            .await
            .map(|_| ())
            .map_err(|err| format!("database: {err}"))
    }
}

/// The one answer to a `UID FETCH` of one mail, if it still exists.
async fn fetch_one<S>(
    session: &mut Session<S>,
    uid: u32,
    query: &str,
) -> Result<Option<Fetch>, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Debug + Send,
{
    let mut answers = session
        .uid_fetch(uid.to_string(), query)
        .await
        .map_err(|err| format!("IMAP FETCH: {}", server_said(&err)))?;
    let mut found = None;
    while let Some(answer) = answers.next().await {
        let fetch = answer.map_err(|err| format!("IMAP FETCH: {}", server_said(&err)))?;
        if fetch.uid == Some(uid) {
            found = Some(fetch);
        }
    }
    Ok(found)
}

/// TLS with the web's root certificates (like the SMTP client), ring as the provider.
fn tls_connector() -> Result<TlsConnector, String> {
    let roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|err| format!("TLS: {err}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

/// Clears the reader's `testing` mark when its test ends, however it ends.
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// The server's own words in a NO or BAD answer, which async-imap keeps in a debug string
/// (`code: None, info: Some("[AUTHENTICATIONFAILED] Invalid credentials")`); other errors as
/// async-imap words them.
fn server_said(err: &async_imap::error::Error) -> String {
    use async_imap::error::Error;
    let (Error::No(debug) | Error::Bad(debug)) = err else {
        return err.to_string();
    };
    debug
        .split_once("info: Some(\"")
        .and_then(|(_, rest)| rest.strip_suffix("\")"))
        .map_or_else(|| debug.clone(), unescape_debug)
}

/// Text as Rust's `{:?}` escaped it, back to one line: `\"` and `\\` are their character, a
/// line break or tab is a space.
fn unescape_debug(escaped: &str) -> String {
    let mut text = String::with_capacity(escaped.len());
    let mut chars = escaped.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            text.push(c);
            continue;
        }
        match chars.next() {
            Some('n' | 'r' | 't') => text.push(' '),
            Some(other) => text.push(other),
            None => {}
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use async_imap::error::Error;

    use super::server_said;

    #[test]
    fn a_refusal_reads_as_the_servers_words() {
        let words = Some(r#"[AUTHENTICATIONFAILED] Invalid "demo" credentials."#);
        let refused = Error::No(format!("code: {:?}, info: {words:?}", None::<u8>));
        assert_eq!(
            server_said(&refused),
            r#"[AUTHENTICATIONFAILED] Invalid "demo" credentials."#
        );
        let escaped = Error::No(format!("code: None, info: {:?}", Some("a\\b\nc")));
        assert_eq!(server_said(&escaped), "a\\b c");
        let bare = Error::Bad("code: None, info: None".into());
        assert_eq!(server_said(&bare), "code: None, info: None");
        assert_eq!(server_said(&Error::ConnectionLost), "connection lost");
    }
}

//! `TestApp`: a running server on a temporary data directory, plus clients for it (HTTP, the
//! database file, widgets), and `wait_until` for what happens in the background.

use std::fmt::Debug;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use futures_util::{SinkExt, StreamExt};
use porch::Server;
use porch::cli::{Cli, Command};
use porch::store::{self, NewSite, NewUser};
use porch::values::SiteSettings;
use reqwest::RequestBuilder;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The password hash of test users made with a token: well-formed argon2id, of no password
/// anyone types, so they count as members who have joined but cannot sign in with one.
const JOINED_PASSWORD_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHQ$c29tZWhhc2hzb21laGFzaHNvbWVoYXNoc29tZWhhc2g";

/// How long any single wait in a test may take before the test fails.
pub const WAIT: Duration = Duration::from_secs(10);
pub const ORIGIN: &str = "https://shop.example.com";

pub struct TestApp {
    pub server: Option<Server>,
    pub addr: SocketAddr,
    pub data_dir: tempfile::TempDir,
    pub http: Http,
}

/// How often [`wait_until`] looks again: short, so a test goes on soon after its condition holds.
const POLL: Duration = Duration::from_millis(20);

/// Polls `probe` until it answers `Ok`, and returns that value. `Err` carries what the probe saw
/// instead: past `timeout` the test fails, naming `what` and the last thing seen.
pub async fn wait_until<T, E: Debug>(
    what: &str,
    timeout: Duration,
    mut probe: impl AsyncFnMut() -> Result<T, E>,
) -> T {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                tokio::time::Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what}; last seen: {seen:#?}"
            ),
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A probe's answer for [`wait_until`]: `Ok(value)` once `holds(&value)`, `Err(value)` before.
pub fn ok_if<T>(value: T, holds: impl FnOnce(&T) -> bool) -> Result<T, T> {
    if holds(&value) { Ok(value) } else { Err(value) }
}

/// HTTP to one server over loopback.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
    addr: SocketAddr,
}

impl Http {
    pub fn new(addr: SocketAddr) -> Self {
        // reqwest is built without a TLS provider of its own (see the workspace Cargo.toml), and
        // its builder wants one even for plain http. Ignored when already installed.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            // Every request on a connection of its own, closed after the answer: no test may
            // depend on a connection kept alive across start-up, a shutdown or a restart.
            .pool_max_idle_per_host(0)
            .default_headers(HeaderMap::from_iter([(
                reqwest::header::CONNECTION,
                HeaderValue::from_static("close"),
            )]))
            // Tests check redirects themselves.
            .redirect(reqwest::redirect::Policy::none())
            // Everything is on loopback: a proxy named by the environment must not be asked.
            .no_proxy()
            .build()
            .expect("an HTTP client");
        Self { client, addr }
    }

    /// A request for `path` on this server, `method` written as in the request line.
    pub fn request(&self, method: &str, path: &str) -> RequestBuilder {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("an HTTP method");
        self.client
            .request(method, format!("http://{}{path}", self.addr))
    }

    pub fn get(&self, path: &str) -> RequestBuilder {
        self.request("GET", path)
    }
}

/// A whole HTTP answer: status, headers and the body as text.
pub struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    /// The value of header `name`, if it is there and is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name)?.to_str().ok()
    }

    /// `name=value` of the `Set-Cookie` for `name`, and the whole header.
    pub fn cookie(&self, name: &str) -> Option<(String, String)> {
        self.headers
            .get_all(reqwest::header::SET_COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| {
                // Over https the cookies carry the `__Host-` prefix.
                v.starts_with(&format!("{name}=")) || v.starts_with(&format!("__Host-{name}="))
            })
            .map(|v| (v.split(';').next().unwrap_or("").to_owned(), v.to_owned()))
    }

    /// The body as JSON; `Null` when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// Sending a request and reading its whole answer.
pub trait Exchange {
    /// The answer; fails the test if the server does not give one.
    async fn answer(self) -> Answer;
    /// The answer, or why there is none (for probes of a server that may not be up).
    async fn try_answer(self) -> reqwest::Result<Answer>;
}

impl Exchange for RequestBuilder {
    async fn answer(self) -> Answer {
        self.try_answer().await.expect("an answer")
    }

    async fn try_answer(self) -> reqwest::Result<Answer> {
        let response = self.send().await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.text().await?;
        Ok(Answer {
            status,
            headers,
            body,
        })
    }
}

/// The names of the files in `dir`, sorted: what a command left beside a database.
pub fn listing(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// The configuration `porch --data-dir DIR serve --listen 127.0.0.1:0 ARGS…` would run with.
pub fn serve_config(data_dir: &std::path::Path, flags: &[&str]) -> porch::config::Config {
    let mut argv = vec![
        "porch",
        "--data-dir",
        data_dir.to_str().expect("utf-8 path"),
        "serve",
    ];
    argv.extend_from_slice(&["--listen", "127.0.0.1:0", "--log", "warn"]);
    argv.extend_from_slice(flags);
    let cli = Cli::try_parse_from(argv).expect("valid arguments");
    let Command::Serve(mut config) = cli.command else {
        unreachable!()
    };
    config.data_dir = cli.data.data_dir;
    config
}

impl TestApp {
    /// Starts a server with default settings plus `args` (flags of `porch serve`).
    pub async fn spawn(args: &[&str]) -> Self {
        Self::spawn_in(tempfile::tempdir().expect("temp dir"), args).await
    }

    /// Starts a server with `args`, then `configure` changes what flags cannot (such as the
    /// capacity sampler's timing).
    pub async fn spawn_configured(
        args: &[&str],
        configure: impl FnOnce(&mut porch::config::Config),
    ) -> Self {
        Self::start(tempfile::tempdir().expect("temp dir"), args, configure).await
    }

    /// Starts a server on an existing data directory (for restarts). The stopped server's lock
    /// can outlive it for an instant: a child process another test forks meanwhile holds the
    /// lock file's descriptor until it execs (a `flock` lives as long as any copy of it), and CI
    /// once caught a restart in that instant. The start waits for the lock to be free.
    pub async fn spawn_in(data_dir: tempfile::TempDir, args: &[&str]) -> Self {
        wait_until("the stopped server's lock to be free", WAIT, async || {
            porch::store::InstanceLock::acquire(data_dir.path())
                .map(drop)
                .map_err(|err| err.to_string())
        })
        .await;
        Self::start(data_dir, args, |_| {}).await
    }

    async fn start(
        data_dir: tempfile::TempDir,
        args: &[&str],
        configure: impl FnOnce(&mut porch::config::Config),
    ) -> Self {
        // TEST_LOG=porch=debug shows the server's log for a failing test.
        let filter = std::env::var("TEST_LOG").unwrap_or_else(|_| "off".to_owned());
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_test_writer()
            .try_init();
        let mut config = serve_config(data_dir.path(), args);
        configure(&mut config);
        let listener = porch::http::bind(config.listen).expect("bind");
        let server = porch::start(config, listener).await.expect("server starts");
        let addr = server.local_addr;
        Self {
            server: Some(server),
            addr,
            data_dir,
            http: Http::new(addr),
        }
    }

    /// The database helpers for this server's file.
    pub fn store(&self) -> TestDb {
        TestDb::open(self.data_dir.path())
    }

    pub fn db(&self) -> rusqlite::Connection {
        self.store().db()
    }

    pub fn add_site(&self, name: &str) -> String {
        self.store().add_site(name)
    }

    pub fn set_site_limits(
        &self,
        key: &str,
        visitor_per_minute: u32,
        visitor_burst: u32,
        flood_messages: u32,
        flood_conversations: u32,
    ) {
        self.store().set_site_limits(
            key,
            visitor_per_minute,
            visitor_burst,
            flood_messages,
            flood_conversations,
        );
    }

    pub fn add_agent_token(&self, name: &str) -> String {
        self.store().add_user_token(name, "agent")
    }

    pub fn add_user_token(&self, name: &str, role: &str) -> String {
        self.store().add_user_token(name, role)
    }

    pub fn count(&self, sql: &str) -> i64 {
        self.store().count(sql)
    }

    /// The first column of every row `sql` selects.
    pub fn column<T: rusqlite::types::FromSql>(&self, sql: &str) -> Vec<T> {
        let conn = self.db();
        let mut stmt = conn.prepare(sql).expect("prepare");
        stmt.query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows")
    }

    /// Calls the JSON API with a bearer token; returns the status and the JSON body (`Null` if
    /// none).
    pub async fn api(
        &self,
        method: &str,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let answer = self
            .http
            .request(method, path)
            .bearer_auth(token)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.map(|b| b.to_string()).unwrap_or_default())
            .answer()
            .await;
        (answer.status, answer.json())
    }

    /// Opens a widget websocket for `site` with `origin`.
    pub async fn connect(&self, site: &str, origin: &str) -> Widget {
        Widget::connect(self.addr, site, origin).await
    }

    /// Connects and says hello; returns the widget and the welcome frame.
    pub async fn visitor(&self, site: &str, token: Option<&str>, last_id: i64) -> (Widget, Value) {
        let mut widget = self.connect(site, ORIGIN).await;
        let welcome = widget.hello(token, last_id).await;
        (widget, welcome)
    }

    /// A new visitor whose connection comes through a proxy for `address` (for a server that
    /// trusts 127.0.0.1 as a proxy); returns the widget after its welcome.
    pub async fn visitor_from(&self, site: &str, address: &str) -> Widget {
        let mut widget = Widget::open(self.addr, site, ORIGIN, Some(address)).await;
        widget.hello(None, 0).await;
        widget
    }
}

/// The database file of a server, opened as another process would.
pub struct TestDb {
    path: PathBuf,
}

impl TestDb {
    pub fn open(data_dir: &std::path::Path) -> Self {
        Self {
            path: data_dir.join("porch.db"),
        }
    }

    /// A separate connection to the same database file, as another process would have.
    pub fn db(&self) -> rusqlite::Connection {
        store::open_write_connection(&self.path, store::Synchronous::Full).expect("open db")
    }

    /// Creates a site allowing [`ORIGIN`]; returns its key.
    pub fn add_site(&self, name: &str) -> String {
        let key = porch::chat::new_site_key();
        store::insert_site(
            &self.db(),
            &NewSite {
                key: &key,
                settings: &SiteSettings::new(name.to_owned(), vec![ORIGIN.to_owned()]),
                created_at: 0,
            },
        )
        .expect("insert site");
        key
    }

    /// Changes a site's brake settings (before any connection, so the site cache is cold).
    pub fn set_site_limits(
        &self,
        key: &str,
        visitor_per_minute: u32,
        visitor_burst: u32,
        flood_messages: u32,
        flood_conversations: u32,
    ) {
        self.db()
            .execute(
                "UPDATE sites SET visitor_messages_per_minute = ?2, visitor_burst = ?3, \
                 flood_messages_per_minute = ?4, flood_conversations_per_minute = ?5 WHERE key = ?1",
                rusqlite::params![key, visitor_per_minute, visitor_burst, flood_messages, flood_conversations],
            )
            .expect("update limits");
    }

    /// Creates a user with a role (`admin` or `agent`) and returns an API token for them.
    pub fn add_user_token(&self, name: &str, role: &str) -> String {
        let conn = self.db();
        let email = format!("{}@example.com", name.to_lowercase());
        let user = store::insert_user(
            &conn,
            &NewUser {
                email: &email,
                name,
                role,
                // A member who has joined (an invited one, without a password, gets no digest),
                // with a password no one knows: a hash of nothing typed.
                password_hash: Some(JOINED_PASSWORD_HASH),
                created_at: 0,
            },
        )
        .expect("insert user");
        let token = porch::http::auth::new_api_token();
        store::insert_api_token(
            &conn,
            &store::NewApiToken {
                user_id: user,
                name: "test",
                token_hash: &porch::http::auth::hash_api_token(&token),
                scope: porch::values::TokenScope::ReadWrite,
                expires_at: None,
                now: 0,
            },
        )
        .expect("insert token");
        token
    }

    /// Counts rows in the database file (read through a separate connection).
    pub fn count(&self, sql: &str) -> i64 {
        self.db().query_row(sql, [], |r| r.get(0)).expect("count")
    }
}

/// A widget-protocol client.
pub struct Widget {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Widget {
    /// Opens a widget websocket to the server at `addr` for `site` with `origin`.
    pub async fn connect(addr: SocketAddr, site: &str, origin: &str) -> Self {
        Self::open(addr, site, origin, None).await
    }

    /// Opens a widget websocket, through a proxy for `forwarded_for` if given.
    async fn open(addr: SocketAddr, site: &str, origin: &str, forwarded_for: Option<&str>) -> Self {
        let url = format!("ws://{addr}/widget/ws?site={site}");
        let mut request = url.into_client_request().expect("request");
        let headers = request.headers_mut();
        headers.insert("origin", origin.parse().expect("origin header"));
        if let Some(address) = forwarded_for {
            headers.insert("x-forwarded-for", address.parse().expect("address header"));
        }
        let (ws, _) = tokio_tungstenite::connect_async(request)
            .await
            .expect("websocket connects");
        Self { ws }
    }

    /// Says hello and returns the welcome frame.
    pub async fn hello(&mut self, token: Option<&str>, last_id: i64) -> Value {
        self.send(json!({"type": "hello", "v": 1, "token": token, "last_id": last_id, "page": "https://shop.example.com/cart"})).await;
        let welcome = self.recv().await;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        welcome
    }

    pub async fn send(&mut self, frame: Value) {
        self.ws
            .send(Message::Text(frame.to_string().into()))
            .await
            .expect("send");
    }

    pub async fn send_raw(&mut self, message: Message) {
        self.ws.send(message).await.expect("send");
    }

    /// The next JSON frame (pings are answered by the library), failing after [`WAIT`].
    pub async fn recv(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("a frame within the wait")
                .expect("the connection is open")
                .expect("a valid frame");
            match message {
                Message::Text(text) => return serde_json::from_str(&text).expect("JSON frame"),
                Message::Ping(_) | Message::Pong(_) => {}
                other => panic!("expected a text frame, got {other:?}"),
            }
        }
    }

    /// Waits for the server to close; returns the close code (None if the TCP stream just ended).
    pub async fn closed(&mut self) -> Option<u16> {
        loop {
            match tokio::time::timeout(WAIT, self.ws.next())
                .await
                .expect("closed within the wait")
            {
                Some(Ok(Message::Close(frame))) => return frame.map(|f| f.code.into()),
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// Sends a message and returns the server's answer to it (ack or error).
    pub async fn say(&mut self, client_id: &str, body: &str) -> Value {
        self.send(json!({"type": "message", "client_id": client_id, "body": body}))
            .await;
        self.recv().await
    }
}

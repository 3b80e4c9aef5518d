//! `porch loadtest-search`: seeds a scratch database (never the live one) with synthetic
//! conversations through the store, 50,000 messages per transaction, indexes them with the
//! indexer's own step (`store::index_messages`, timed: what the background indexer costs the
//! writer a message), then times the search page's read (`chat::read_search_page`) over a
//! fixed set of queries.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use rusqlite::Connection;

use crate::chat::{SearchTerms, read_search_page};
use crate::store::{
    self, NewAgentMessage, NewSite, NewVisitorMessage, SearchFilter, SiteId, Synchronous,
    VisitorDetails,
};
use crate::values::{ClientId, Invalid, MessageBody, SiteSettings};

/// The flags of `porch loadtest-search`.
#[derive(Debug, Clone, Args)]
pub struct SearchBenchArgs {
    /// Messages to seed.
    #[arg(long, default_value_t = 1_000_000)]
    pub messages: u32,
    /// Messages per conversation (one visitor each; every third message is an agent's).
    #[arg(long, default_value_t = 20)]
    pub per_conversation: u32,
    /// Timed runs of each query, after one untimed run.
    #[arg(long, default_value_t = 50)]
    pub repeat: u32,
    /// Keep the scratch database here instead of a temporary directory that is removed.
    #[arg(long)]
    pub scratch: Option<PathBuf>,
}

/// Messages per seeding transaction.
const BATCH: u32 = 50_000;
/// Messages per indexing step, as the background indexer takes them.
const INDEX_BATCH: u32 = 100;

/// The timed queries: (what it stands for, the query as typed).
const QUERIES: [(&str, &str); 6] = [
    ("common word (in most messages)", "order"),
    ("rare word (1 in 50,000 messages)", "xylophone"),
    ("word forms (stemming)", "refunds"),
    ("two common words", "shipping delay"),
    ("a visitor's email", "visitor42@example.com"),
    ("no hit", "zzyzx"),
];

/// Words a support chat is made of, most frequent first; the rest of the vocabulary is
/// made-up words. `xylophone` and `zzyzx` are never drawn (planted / absent).
const COMMON: [&str; 24] = [
    "order", "the", "my", "is", "shipping", "hello", "please", "refund", "when", "can", "delay",
    "parcel", "thanks", "invoice", "account", "password", "delivery", "help", "payment", "address",
    "refunded", "return", "tracking", "refusal",
];

/// A small deterministic generator (xorshift64*): the same corpus on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in [0, 1).
    #[allow(clippy::cast_precision_loss)] // 53 bits are plenty for a word's rank
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A word of a 5,000-word vocabulary, log-uniform by rank (Zipf-like: the first word is in
/// about 8 % of draws).
fn word(rng: &mut Rng) -> String {
    const VOCABULARY: f64 = 5000.0;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // 0..5000
    let rank = ((VOCABULARY + 1.0).powf(rng.unit()) - 1.0) as usize;
    COMMON.get(rank).map_or_else(
        || {
            let syllables = [
                "ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "ben", "dar",
            ];
            let mut n = rank;
            let mut made = String::new();
            while n > 0 {
                made.push_str(syllables[n % 10]);
                n /= 10;
            }
            made
        },
        |w| (*w).to_owned(),
    )
}

/// Message `n`'s text: 5 to 30 words; one message in 50,000 carries `xylophone`.
fn body(rng: &mut Rng, n: u32) -> Result<MessageBody, Invalid> {
    let count = 5 + rng.next() % 26;
    let mut words: Vec<String> = (0..count).map(|_| word(rng)).collect();
    if n % 50_000 == 7 {
        words.push("xylophone".to_owned());
    }
    MessageBody::parse(&words.join(" "))
}

/// Inserts messages `from..to` through the store, as the writer would.
fn insert_messages(
    conn: &Connection,
    site: SiteId,
    per_conversation: u32,
    rng: &mut Rng,
    range: std::ops::Range<u32>,
) -> anyhow::Result<()> {
    let mut current = None;
    for n in range {
        let position = n % per_conversation;
        if position == 0 {
            current = None;
        }
        let text = body(rng, n)?;
        match current {
            Some((conversation, _)) if position % 3 == 2 => {
                store::insert_agent_message(
                    conn,
                    &NewAgentMessage {
                        conversation_id: conversation,
                        site_id: site,
                        user_id: None,
                        author_name: "Agent".to_owned(),
                        body: text,
                        is_note: false,
                        attachments: Vec::new(),
                        client_id: None,
                        now: i64::from(n),
                    },
                )?;
            }
            _ => {
                let visitor = n / per_conversation;
                let mut token_hash = [0u8; 32];
                token_hash[..4].copy_from_slice(&visitor.to_le_bytes());
                let stored = store::insert_visitor_message(
                    conn,
                    &NewVisitorMessage {
                        site_id: site,
                        visitor_id: current.map(|(_, v)| v),
                        token_hash,
                        upload_hash: token_hash,
                        details: VisitorDetails::default(),
                        client_id: ClientId::parse(&format!("m{n}"))?,
                        body: text,
                        attachments: Vec::new(),
                        now: i64::from(n),
                    },
                )?;
                if current.is_none() {
                    // Some visitors leave an email, as the widget's offline form records it.
                    if visitor % 10 == 2 {
                        let email = format!("visitor{visitor}@example.com");
                        store::set_visitor_email(conn, stored.visitor_id, &email)?;
                    }
                }
                current = Some((stored.conversation_id, stored.visitor_id));
            }
        }
    }
    Ok(())
}

/// Seeds `messages` messages of `site`, `per_conversation` a conversation, in transactions of
/// [`BATCH`]; returns the time it took. Also the history `porch loadtest --seed-messages` puts
/// under its stairs.
pub(super) fn seed(
    conn: &mut Connection,
    site: SiteId,
    messages: u32,
    per_conversation: u32,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut rng = Rng(0x005E_ED0F_9A3C);
    let mut from = 0;
    while from < messages {
        let to = (from + BATCH).min(messages);
        let tx = conn.transaction()?;
        insert_messages(&tx, site, per_conversation, &mut rng, from..to)?;
        tx.commit()?;
        from = to;
    }
    Ok(started.elapsed())
}

/// Indexes every seeded message with the indexer's step, [`INDEX_BATCH`] a transaction as
/// the background indexer does (without its pauses); returns the time it took.
pub(super) fn index_all(conn: &mut Connection) -> anyhow::Result<Duration> {
    let started = Instant::now();
    loop {
        let tx = conn.transaction()?;
        let step = store::index_messages(&tx, INDEX_BATCH)?;
        tx.commit()?;
        if step.messages == 0 {
            return Ok(started.elapsed());
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(at).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn row(label: &str, mut times: Vec<Duration>, found: &str) -> String {
    times.sort_unstable();
    format!(
        "| {label} | {found} | {:.2} | {:.2} | {:.2} |",
        percentile(&times, 0.50),
        percentile(&times, 0.95),
        percentile(&times, 0.99)
    )
}

/// Times every query `args.repeat` times, round-robin; returns the Markdown table.
fn time_queries(path: &Path, args: &SearchBenchArgs) -> anyhow::Result<String> {
    let conn = store::open_read_connection(path)?;
    let filter = SearchFilter::default();
    let mut per_query: Vec<Vec<Duration>> = vec![Vec::new(); QUERIES.len()];
    let mut found = Vec::new();
    for (_, query) in QUERIES {
        let terms = SearchTerms::parse(query).context("a query with words")?;
        let results = read_search_page(&conn, &terms, &filter, 1)?;
        found.push(format!(
            "{}{} messages, {} visitors",
            results.total,
            if results.is_capped { "+" } else { "" },
            results.visitors.len()
        ));
    }
    for _ in 0..args.repeat {
        for (i, (_, query)) in QUERIES.iter().enumerate() {
            let terms = SearchTerms::parse(query).context("a query with words")?;
            let started = Instant::now();
            read_search_page(&conn, &terms, &filter, 1)?;
            per_query[i].push(started.elapsed());
        }
    }
    let mut lines = vec![
        "| query | found (page 1) | p50 ms | p95 ms | p99 ms |".to_owned(),
        "|---|---|---|---|---|".to_owned(),
    ];
    let all: Vec<Duration> = per_query.iter().flatten().copied().collect();
    for (((label, query), times), found) in QUERIES.iter().zip(per_query).zip(&found) {
        lines.push(row(&format!("{label}: `{query}`"), times, found));
    }
    lines.push(row("**all queries**", all, ""));
    Ok(lines.join("\n"))
}

/// Runs the benchmark and prints a Markdown report.
pub fn run_search_bench(args: &SearchBenchArgs) -> anyhow::Result<()> {
    let temporary = match &args.scratch {
        Some(_) => None,
        None => Some(tempfile::tempdir().context("creating a scratch directory")?),
    };
    let dir = args
        .scratch
        .clone()
        .or_else(|| temporary.as_ref().map(|t| t.path().to_owned()))
        .context("a scratch directory")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("search-bench.db");
    anyhow::ensure!(
        !path.exists(),
        "{} exists: pick an empty --scratch",
        path.display()
    );
    // NORMAL: the seeding is not what is measured, and a scratch file needs no power-loss
    // durability.
    anyhow::ensure!(
        args.per_conversation > 0,
        "--per-conversation must be at least 1"
    );
    let mut conn = store::open_write_connection(&path, Synchronous::Normal)?;
    store::apply_migrations(&mut conn)?;
    let site = store::insert_site(
        &conn,
        &NewSite {
            key: "s_searchbench",
            settings: &SiteSettings::new(
                "Bench".to_owned(),
                vec!["https://bench.example".to_owned()],
            ),
            created_at: 0,
        },
    )?;
    let seeded = seed(&mut conn, site.id, args.messages, args.per_conversation)?;
    let indexed = index_all(&mut conn)?;
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA optimize;")?;
    let table = time_queries(&path, args)?;
    let bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    super::write_stdout(&format!(
        "Search over {messages} messages in {conversations} conversations ({size} MiB database).\n\n\
         Seeding through the store, {BATCH} a transaction (nothing indexed on insert): {seed:.1} s.\n\
         Indexing them with the indexer's step, {INDEX_BATCH} a transaction: {index:.1} s, \
         {per_message:.1} µs a message.\n\
         Each query run {repeat} times (page 1: ranking, 20 snippets, visitors):\n\n{table}",
        messages = args.messages,
        conversations = args.messages.div_ceil(args.per_conversation.max(1)),
        size = bytes / (1024 * 1024),
        seed = seeded.as_secs_f64(),
        index = indexed.as_secs_f64(),
        per_message = indexed.as_secs_f64() * 1e6 / f64::from(args.messages.max(1)),
        repeat = args.repeat,
    ))
}

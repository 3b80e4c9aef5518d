//! `porch site …`: create and list sites, print embed snippets.

use anyhow::Context;
use clap::Subcommand;
use rusqlite::Connection;
use serde_json::json;

use crate::audit::{self, Actor, AuditAction, Target};
use crate::chat::{SiteSettingsInput, new_site_key};
use crate::clock::now_ms;
use crate::store::{self, NewSite, SiteRow};
use crate::widget::snippet;

use super::write_out;

#[derive(Debug, Subcommand)]
pub enum SiteCommand {
    /// Create a site and print its embed snippet.
    Add {
        /// Name shown in the widget header and to agents.
        #[arg(long)]
        name: String,
        /// An origin allowed to embed the widget, such as `https://www.example.com` (repeatable).
        #[arg(long = "origin", required = true)]
        origins: Vec<String>,
        /// URL at which browsers reach Porch, baked into the snippet.
        #[arg(long, env = "PORCH_PUBLIC_URL", value_parser = crate::config::public_url_arg)]
        public_url: Option<String>,
        /// Print JSON (`{"key", "snippet"}`) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List sites with their keys and allowed origins.
    List,
    /// Print a site's embed snippet.
    Snippet {
        /// The site's key (s_…).
        key: String,
        /// URL at which browsers reach Porch, baked into the snippet.
        #[arg(long, env = "PORCH_PUBLIC_URL", value_parser = crate::config::public_url_arg)]
        public_url: Option<String>,
    },
}

/// Where the snippet points when no public URL is given: fine for trying Porch on one machine.
const DEFAULT_PUBLIC_URL: &str = "http://127.0.0.1:8080";

/// The snippet of `site`, pointing to `public_url`, or to [`DEFAULT_PUBLIC_URL`] with a warning
/// that it only works on this machine.
fn site_snippet(public_url: Option<String>, site: &SiteRow) -> String {
    let public_url = public_url.unwrap_or_else(|| {
        tracing::warn!(
            "no --public-url (PORCH_PUBLIC_URL) given: the snippet points to {DEFAULT_PUBLIC_URL}, \
             which works only on this machine and only while Porch listens on port 8080; give \
             --public-url, or copy the snippet from the site's page in the admin UI"
        );
        DEFAULT_PUBLIC_URL.to_owned()
    });
    snippet(public_url.trim_end_matches('/'), &site.key, &site.settings)
}

pub fn run(conn: &Connection, command: SiteCommand) -> anyhow::Result<()> {
    match command {
        SiteCommand::Add {
            name,
            origins,
            public_url,
            json,
        } => {
            // The admin form's own parse, so the same input gets the same refusal here.
            let settings = SiteSettingsInput {
                name,
                origins: origins.join("\n"),
                ..SiteSettingsInput::new_site()
            }
            .parse()
            .map_err(|invalid| anyhow::anyhow!("the site was not created: {invalid}"))?;
            let key = new_site_key();
            // One transaction: the site and its audit record commit together.
            let tx = store::write_transaction(conn)?;
            let target = Target::site(&key, &settings.name);
            audit::record(
                &tx,
                &Actor::cli(),
                AuditAction::SiteCreated,
                &target,
                &json!({}),
            )?;
            let site = store::insert_site(
                &tx,
                &NewSite {
                    key: &key,
                    settings: &settings,
                    created_at: now_ms(),
                },
            )
            .context("creating the site")?;
            tx.commit()?;
            // Only once the site exists: a refused one has no snippet to warn about.
            let snippet = site_snippet(public_url, &site);
            if json {
                write_out(&json!({"key": site.key, "snippet": snippet}).to_string())
            } else {
                write_out(&format!(
                    "Created site \"{}\" with key {}.\nAllowed origins: {}\n\n\
                     Paste this snippet just before </body> on every page of the site:\n\n{snippet}",
                    site.settings.name,
                    site.key,
                    site.settings.origins.join(", ")
                ))
            }
        }
        SiteCommand::List => {
            let sites = store::list_sites(conn)?;
            if sites.is_empty() {
                return write_out(
                    "No sites yet. Create one with `porch site add --name NAME --origin URL`.",
                );
            }
            let lines: Vec<String> = sites
                .iter()
                .map(|s| {
                    format!(
                        "{}  {}  {}",
                        s.key,
                        s.settings.name,
                        s.settings.origins.join(" ")
                    )
                })
                .collect();
            write_out(&lines.join("\n"))
        }
        SiteCommand::Snippet { key, public_url } => {
            let site = store::find_site_by_key(conn, &key)?
                .with_context(|| format!("no site has the key {key}"))?;
            write_out(&site_snippet(public_url, &site))
        }
    }
}

//! `porch user …` and `porch token …`: agents, admins and API tokens.

use std::fmt::Write as _;
use std::io::Read;

use anyhow::{Context, bail};
use clap::{Subcommand, ValueEnum};
use rusqlite::Connection;

use serde_json::json;

use crate::accounts::{
    DisplayName, EmailAddress, Password, TokenRequest, create_api_token, hash_password,
    reset_two_factor_in, revoke_api_token, token_name,
};
use crate::audit::{self, Actor, AuditAction, Target};
use crate::clock::now_ms;
use crate::store::{self, NewUser};
use crate::values::TokenScope;

use super::write_out;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Role {
    /// Manages sites, integrations and the team, and answers chats.
    Admin,
    /// Answers chats.
    Agent,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create an agent or admin.
    Add {
        /// The address they sign in with (unique, any case).
        #[arg(long)]
        email: String,
        /// Display name shown to visitors.
        #[arg(long)]
        name: String,
        #[arg(long, value_enum, default_value = "agent")]
        role: Role,
        /// Read the password from standard input (otherwise the user has none yet and cannot
        /// sign in until one is set).
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set a user's password, read from standard input, and end all their sessions (a forgotten
    /// password, or the last admin locked out).
    #[command(name = "set-password")]
    SetPassword {
        /// The user's email.
        email: String,
    },
    /// List every user: id, email, name, role, and whether they are disabled.
    List,
    /// Switch off a user's two-factor sign-in and end their sessions (a lost phone, or the last
    /// admin locked out); they then sign in with their password alone.
    #[command(name = "reset-2fa")]
    Reset2fa {
        /// The user's email.
        email: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token for a user and print it (it is shown only once).
    Add {
        /// The user's email.
        #[arg(long)]
        user: String,
        /// What the token is for.
        #[arg(long, default_value = "cli")]
        name: String,
        /// Only `GET` and `HEAD` requests: for dashboards and exports.
        #[arg(long)]
        read_only: bool,
        /// The token stops working this long after it is made (for example `90d`, `12h`);
        /// without it the token works until it is revoked.
        #[arg(long, value_parser = crate::config::parse_duration)]
        expires_in: Option<std::time::Duration>,
    },
    /// List every API token: id, name, user, scope, created, expires, last used (never the token
    /// itself).
    List,
    /// Revoke an API token at once.
    Revoke {
        /// The token's id, from `porch token list`.
        id: i64,
    },
}

pub fn run_user(conn: &Connection, command: UserCommand) -> anyhow::Result<()> {
    match command {
        UserCommand::Add {
            email,
            name,
            role,
            password_stdin,
        } => add_user(conn, &email, &name, role, password_stdin),
        UserCommand::SetPassword { email } => set_password(conn, email.trim()),
        UserCommand::List => list_users(conn),
        UserCommand::Reset2fa { email } => reset_two_factor(conn, email.trim()),
    }
}

fn list_users(conn: &Connection) -> anyhow::Result<()> {
    let mut out = String::from("ID\tEMAIL\tNAME\tROLE\tSTATE");
    for user in store::list_users(conn)? {
        let state = if user.is_disabled {
            "disabled"
        } else {
            "enabled"
        };
        let _ = write!(
            out,
            "\n{}\t{}\t{}\t{}\t{state}",
            user.id, user.email, user.name, user.role
        );
    }
    write_out(&out)
}

/// The password on standard input (one line; its line ending is not part of it), hashed.
fn password_from_stdin() -> anyhow::Result<String> {
    let mut password = String::new();
    std::io::stdin()
        .read_to_string(&mut password)
        .context("reading the password")?;
    let password = password.trim_end_matches(['\r', '\n']);
    if password.is_empty() {
        bail!(
            "no password on standard input: pipe it in, e.g. \
             `printf '%s\\n' \"$PASSWORD\" | porch user …`, or type it and end with Ctrl-D"
        );
    }
    let password = Password::parse(password).map_err(|e| anyhow::anyhow!("{e}"))?;
    hash_password(&password).map_err(|e| anyhow::anyhow!("hashing the password: {e}"))
}

fn set_password(conn: &Connection, email: &str) -> anyhow::Result<()> {
    let Some(user) = store::find_user_by_email(conn, email)? else {
        bail!("no user has the email {email} (see `porch user list`)");
    };
    // Hashed before the transaction: argon2 takes a moment, and the writer must not wait on it.
    let hashed = password_from_stdin()?;
    // One transaction: the password, the ended sessions and the audit record commit together.
    let tx = store::write_transaction(conn)?;
    store::update_password_hash(&tx, user.id, &hashed)?;
    store::delete_user_sessions(&tx, user.id, None)?;
    let detail = json!({"via": "cli"});
    audit::record(
        &tx,
        &Actor::cli(),
        AuditAction::UserPasswordChanged,
        &Target::user(&user),
        &detail,
    )?;
    tx.commit()?;
    let disabled = if user.is_disabled {
        " The account is disabled: an admin enables it on /team."
    } else {
        ""
    };
    write_out(&format!(
        "Password of {email} set and their sessions ended.{disabled}"
    ))
}

fn reset_two_factor(conn: &Connection, email: &str) -> anyhow::Result<()> {
    // One transaction: the reset, the ended sessions and the audit record commit together.
    let tx = store::write_transaction(conn)?;
    let Some(user) = store::find_user_by_email(&tx, email)? else {
        bail!("no user has the email {email}");
    };
    if !reset_two_factor_in(&tx, &Actor::cli(), &user)? {
        bail!("{email} has no two-factor sign-in");
    }
    let next = if store::find_two_factor_required(&tx)? {
        "the team requires two-factor, so after their password they set it up again"
    } else {
        "they sign in with their password alone"
    };
    tx.commit()?;
    write_out(&format!(
        "Two-factor sign-in of {email} is off and their sessions ended; {next}."
    ))
}

fn add_user(
    conn: &Connection,
    email: &str,
    name: &str,
    role: Role,
    password_stdin: bool,
) -> anyhow::Result<()> {
    // The team page's rules: an address its sign-in form takes, and a name of 1 to 80 characters.
    let email = EmailAddress::parse_new(email).map_err(|e| anyhow::anyhow!("--email: {e}"))?;
    let email = email.as_str();
    let name = DisplayName::parse(name).map_err(|e| anyhow::anyhow!("--name: {e}"))?;
    if store::find_user_by_email(conn, email)?.is_some() {
        bail!("a user with the email {email} already exists (see `porch user list`)");
    }
    let password_hash = password_stdin.then(password_from_stdin).transpose()?;
    let role = match role {
        Role::Admin => "admin",
        Role::Agent => "agent",
    };
    let new = NewUser {
        email,
        name: name.as_str(),
        role,
        password_hash: password_hash.as_deref(),
        created_at: now_ms(),
    };
    // One transaction: the user and its audit record commit together.
    let tx = store::write_transaction(conn)?;
    let id = store::insert_user(&tx, &new)
        .with_context(|| format!("creating {email} (is the email taken?)"))?;
    if let Some(user) = store::find_user(&tx, id)? {
        let detail = json!({"role": role, "via": "cli"});
        audit::record(
            &tx,
            &Actor::cli(),
            AuditAction::UserCreated,
            &Target::user(&user),
            &detail,
        )?;
    }
    tx.commit()?;
    if password_hash.is_some() {
        return write_out(&format!("Created {role} {email}."));
    }
    // Without a password nobody can sign in as them yet: say how they get one.
    write_out(&format!(
        "Created {role} {email}, without a password: they cannot sign in yet. Set one with \
         `porch user set-password {email}` (read from standard input), or make them an \
         invitation link on the Team page."
    ))
}

/// A token's expiry as the list shows it: `expired` after the time once it has passed, so an
/// expired token (still listed, answered `token_expired`) does not read as a live one.
fn expiry(expires_at: Option<i64>, now: i64) -> String {
    match expires_at {
        Some(at) if at <= now => format!("{} (expired)", when(Some(at))),
        other => when(other),
    }
}

/// The shortest `--expires-in`.
const MIN_TOKEN_LIFE: std::time::Duration = std::time::Duration::from_mins(1);

/// A time in milliseconds since the epoch, as RFC 3339 UTC.
fn when(ms: Option<i64>) -> String {
    ms.map_or_else(|| "never".to_owned(), |ms| porch_app::format_time(ms).0)
}

pub fn run_token(conn: &Connection, command: TokenCommand) -> anyhow::Result<()> {
    let (user, name, read_only, expires_in) = match command {
        TokenCommand::Add {
            user,
            name,
            read_only,
            expires_in,
        } => (user, name, read_only, expires_in),
        TokenCommand::List => {
            let now = now_ms();
            let mut out = String::from("ID\tNAME\tUSER\tSCOPE\tCREATED\tEXPIRES\tLAST USED");
            for t in store::list_api_tokens(conn)? {
                let _ = write!(
                    out,
                    "\n{}\t{}\t{}\t{}\t{}\t{}\t{}",
                    t.id,
                    t.name,
                    t.user_email,
                    t.scope.as_str(),
                    when(Some(t.created_at)),
                    expiry(t.expires_at, now),
                    when(t.last_used_at)
                );
            }
            return write_out(&out);
        }
        TokenCommand::Revoke { id } => {
            let tx = store::write_transaction(conn)?;
            if revoke_api_token(&tx, &Actor::cli(), id)?.is_none() {
                // A revoked token leaves the list: say so, or a second revoke reads as a typo.
                if let Some((at, actor)) = store::find_token_revocation(&tx, id)? {
                    bail!(
                        "API token {id} was revoked already, at {} by {actor}",
                        when(Some(at))
                    );
                }
                if let Some(user) = store::find_token_owner(&tx, id)? {
                    bail!(
                        "API token {id} no longer exists: it went when its user ({user}) was \
                         disabled or removed, which deletes their tokens"
                    );
                }
                bail!("no API token has the id {id} (see `porch token list`)");
            }
            tx.commit()?;
            return write_out(&format!("Revoked API token {id}."));
        }
    };
    let found = store::find_user_by_email(conn, user.trim())?
        .with_context(|| format!("no user has the email {user}"))?;
    if found.is_disabled {
        // It would work the moment they are enabled again, which nobody would expect.
        bail!("{user} is disabled: enable them on the team page first");
    }
    let name = token_name(&name).map_err(|refused| anyhow::anyhow!("--name: {refused}"))?;
    let now = now_ms();
    // A token that is dead by the time it is pasted anywhere is a mistake (`1ms` for `1m`).
    if expires_in.is_some_and(|after| after < MIN_TOKEN_LIFE) {
        bail!(
            "--expires-in must be at least a minute (leave it out for a token that does not \
             expire)"
        );
    }
    let expires_at = expires_in
        .map(|after| i64::try_from(after.as_millis()).map(|ms| now.saturating_add(ms)))
        .transpose()
        .context("--expires-in is too long")?;
    let scope = if read_only {
        TokenScope::Read
    } else {
        TokenScope::ReadWrite
    };
    let tx = store::write_transaction(conn)?;
    let request = TokenRequest {
        name,
        scope,
        expires_at,
        now,
    };
    let (_, token) = create_api_token(&tx, &Actor::cli(), &found, &request)?;
    tx.commit()?;
    write_out(&token)
}

//! Reading the command line: the `PORCH_*` variables with it (an empty one counts as unset), and
//! the answer to arguments clap could not parse, naming each setting by its variable and flag.

use std::io::Write;
use std::process::ExitCode;

use super::Cli;

/// Parses the command line and the `PORCH_*` variables, an empty variable counting as unset:
/// `PORCH_SMTP_URL=` in a compose `.env` file (or `PORCH_SMTP_URL: ""` in Kubernetes) means "no
/// SMTP", as it does for most services, not an invalid URL that stops the server.
pub(super) fn parse_arguments() -> Result<Cli, clap::Error> {
    fn without_empty_variables(command: clap::Command) -> clap::Command {
        let empty: Vec<clap::Id> = command
            .get_arguments()
            .filter(|arg| {
                arg.get_env()
                    .and_then(std::env::var_os)
                    .is_some_and(|value| value.is_empty())
            })
            .map(|arg| arg.get_id().clone())
            .collect();
        empty
            .into_iter()
            .fold(command, |command, id| {
                command.mut_arg(id, |arg| arg.env(None))
            })
            .mut_subcommands(without_empty_variables)
    }
    let matches =
        without_empty_variables(<Cli as clap::CommandFactory>::command()).try_get_matches()?;
    <Cli as clap::FromArgMatches>::from_arg_matches(&matches)
}

/// Answers arguments clap could not parse. Help and version go out as clap writes them; a value
/// that does not parse gets one line naming the environment variable and the flag, exit 2, like
/// the rules of `Config::validate` (an operator usually sets `PORCH_*`, not the flag). A flag
/// given without its value names the flag only (an empty variable counts as unset, so it came
/// from the command line). Anything else (an unknown flag, also a command's flag put before the
/// command, a missing argument or subcommand) gets clap's whole text, exit 2: its first line
/// alone does not say which argument is missing, and its tip says where a flag goes.
pub(super) fn refuse_arguments(err: &clap::Error) -> ExitCode {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = err.print();
        return ExitCode::SUCCESS;
    }
    let flag = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.split_whitespace().next().map(str::to_owned),
        _ => None,
    };
    let named = flag.as_deref().and_then(|f| Some((env_of_flag(f)?, f)));
    let Some((variable, flag)) = named.filter(|_| err.kind() != ErrorKind::UnknownArgument) else {
        let _ = err.print();
        return ExitCode::from(2);
    };
    // Two settings that exclude each other (a secret and its `_FILE` twin), from flags or the
    // environment alike: both are named as settings, neither as the one that was written.
    if err.kind() == ErrorKind::ArgumentConflict
        && let Some(ContextValue::String(prior)) = err.get(ContextKind::PriorArg)
        && let Some(other_flag) = prior.split_whitespace().next()
        && let Some(other) = env_of_flag(other_flag)
    {
        // The same flag twice on the command line (a variable is one value, and a flag wins
        // over it): "PORCH_READERS (--readers) and PORCH_READERS (--readers)" said nothing.
        if other_flag == flag {
            let _ = writeln!(
                std::io::stderr(),
                "error: {flag} was given twice: give it once"
            );
            return ExitCode::from(2);
        }
        let _ = writeln!(
            std::io::stderr(),
            "error: {variable} ({flag}) and {other} ({other_flag}) cannot both be set: give one"
        );
        return ExitCode::from(2);
    }
    let rendered = err.to_string();
    let first = rendered.lines().next().unwrap_or_default();
    let reason = first.strip_prefix("error: ").unwrap_or(first);
    if reason.ends_with("but none was supplied") {
        let _ = writeln!(std::io::stderr(), "error: {flag}: {reason}");
        return ExitCode::from(2);
    }
    // A choice (`--synchronous`, `--log-format`) names what it takes: clap says so below the
    // first line, which is all that is kept.
    let choices = match err.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            format!(" (one of: {})", values.join(", "))
        }
        // A switch (BoolishValueParser) says only "value was not a boolean".
        _ if reason.ends_with("value was not a boolean") => {
            " (one of: true, yes, on, 1, false, no, off, 0)".to_owned()
        }
        _ => String::new(),
    };
    let _ = writeln!(
        std::io::stderr(),
        "error: {variable} ({flag}): {reason}{choices}"
    );
    ExitCode::from(2)
}

/// The environment variable behind a long flag such as `--readers`, wherever it is defined.
fn env_of_flag(flag: &str) -> Option<String> {
    use clap::CommandFactory;
    let long = flag.strip_prefix("--")?;
    let root = Cli::command();
    let mut commands = vec![&root];
    while let Some(command) = commands.pop() {
        let found = command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(long))
            .and_then(clap::Arg::get_env);
        if let Some(env) = found {
            return Some(env.to_string_lossy().into_owned());
        }
        commands.extend(command.get_subcommands());
    }
    None
}

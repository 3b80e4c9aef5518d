//! docs/configuration.md lists every `PORCH_*` variable the command line accepts, and nothing
//! that it does not.

use std::collections::BTreeSet;

use clap::CommandFactory;
use porch::cli::Cli;

fn variables_in(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("PORCH_") {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        found.insert(tail[..end].trim_end_matches('_').to_owned());
        rest = &tail[end..];
    }
    found
}

fn cli_variables() -> BTreeSet<String> {
    fn walk(command: &clap::Command, found: &mut BTreeSet<String>) {
        for arg in command.get_arguments() {
            if let Some(env) = arg.get_env() {
                found.insert(env.to_string_lossy().into_owned());
            }
        }
        for sub in command.get_subcommands() {
            walk(sub, found);
        }
    }
    let mut found = BTreeSet::new();
    walk(&Cli::command(), &mut found);
    found
}

#[test]
fn configuration_doc_lists_exactly_the_cli_variables() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/configuration.md"
    ))
    .expect("docs/configuration.md exists");
    let documented = variables_in(&doc);
    let accepted = cli_variables();
    let missing: Vec<_> = accepted.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&accepted).collect();
    assert!(
        missing.is_empty(),
        "not documented in docs/configuration.md: {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "documented but not accepted by porch: {stale:?}"
    );
}

//! Settings refused or taken with a warning say what is wanted: a listen address that is a host
//! name, a duration that does not parse, a public URL with a path, a key file other users can
//! read (each said only as a parser's or a file's bare words before 2026-12-07).

use std::os::unix::fs::PermissionsExt as _;

use crate::config_validation::{lines_until_listening, porch_args};

#[test]
fn a_host_name_to_listen_on_or_a_wordy_duration_is_refused_with_an_example() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().to_str().expect("utf-8");
    for args in [
        ["serve", "--listen", "localhost:8080"],
        ["serve", "--listen", "127.0.0.1"],
        ["health", "--listen", "localhost:8080"],
    ] {
        let (code, said) = porch_args(&[&["--data-dir", data], &args[..]].concat());
        assert_eq!(code, Some(2), "{args:?}: {said}");
        assert!(
            said.contains("must be an IP address and a port, such as 127.0.0.1:8080"),
            "{args:?}: {said}"
        );
    }
    let (code, said) = porch_args(&[
        "--data-dir",
        data,
        "token",
        "add",
        "--user",
        "a@example.com",
        "--expires-in",
        "forever",
    ]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("write a duration such as 90s, 15m, 24h or 30days"),
        "{said}"
    );
}

#[test]
fn a_public_url_with_a_path_and_a_key_others_can_read_are_warned_of() {
    let dir = tempfile::tempdir().expect("temp dir");
    let lines = lines_until_listening(
        dir.path(),
        &[("PORCH_PUBLIC_URL", "https://example.com/chat")],
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("WARN") && l.contains("has a path")),
        "{lines:?}"
    );
    // The first start generated the key 0600; a restore's `cp` under umask 022 makes it 0644.
    let key = dir.path().join("secret.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let lines = lines_until_listening(dir.path(), &[]);
    let warned = lines
        .iter()
        .find(|l| l.contains("WARN") && l.contains("secret.key can be read by other users"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert!(warned.contains("chmod 600"), "{warned}");
}

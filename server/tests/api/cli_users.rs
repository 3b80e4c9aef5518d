//! `porch user add` holds an address to the team page's rule: it accepted `x y@example.com`,
//! `user@` or `a@b`, an account no sign-in form would then take.

use crate::config_validation::porch_args;

#[test]
fn cli_user_add_refuses_an_address_the_team_page_refuses() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().to_str().expect("utf-8");
    let add = |email: &str| {
        porch_args(&[
            "--data-dir",
            data,
            "user",
            "add",
            "--email",
            email,
            "--name",
            "Ana",
        ])
    };
    for email in [
        "x y@example.com",
        "@example.com",
        "user@",
        "a@b",
        "ana.example.com",
        "<a@example.com>",
        "a@example..com",
        "a@example.com.",
    ] {
        let (code, said) = add(email);
        assert_eq!(code, Some(1), "{email}: {said}");
        assert!(
            said.contains("--email: Enter an email address such as ana@example.com."),
            "{email}: {said}"
        );
    }
    let (code, said) = add(" ana@example.com ");
    assert_eq!(code, Some(0), "{said}");
}

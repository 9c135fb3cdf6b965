//! The library as README's "Use toolgate as a library" shows it: the
//! example itself runs here (its asserts are the test), and `.ci/run` also
//! builds and runs it without default features, as an embedder would.

#[path = "../examples/embed.rs"]
mod embed;

#[test]
fn the_embed_example_decides_and_runs_calls() {
    embed::main().expect("the example runs");
}

#[test]
fn a_policy_from_text_follows_extends_and_reports_errors_with_positions() {
    use toolgate::{Decision, Policy, ToolCall, Workspace};
    let ws = Workspace::new(env!("CARGO_MANIFEST_DIR")).unwrap();
    // Only what the text says: no default layer, so `rm` falls to the default.
    let own = Policy::from_yaml("version: 1\ncommands:\n  allow: [rm]\n  default: deny\n").unwrap();
    let rm = ToolCall::new("bash", serde_json::json!({"command": "rm -rf /"}));
    assert_eq!(
        own.evaluate(&ws, &rm).decision(),
        Decision::Deny,
        "outside the roots"
    );
    let ls = ToolCall::new("bash", serde_json::json!({"command": "ls"}));
    assert_eq!(own.evaluate(&ws, &ls).decision(), Decision::Deny);
    assert_eq!(own.evaluate(&ws, &ls).rule(), Some("commands.default"));

    let err = Policy::from_yaml("version: 1\ncommands:\n  alow: [ls]\n").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("<yaml>:3:3"), "{text}");
    assert!(matches!(err, toolgate::Error::Config(_)));

    let missing = Policy::from_yaml("version: 1\nextends: [no-such-file.yaml]\n").unwrap_err();
    assert!(
        missing.to_string().contains("no-such-file.yaml"),
        "{missing}"
    );

    let loaded = Policy::load(
        concat!(env!("CARGO_MANIFEST_DIR"), "/policies"),
        concat!(env!("CARGO_MANIFEST_DIR"), "/tool-manifests"),
    )
    .unwrap();
    assert!(loaded.active_tools().iter().any(|t| t == "bash"));
}

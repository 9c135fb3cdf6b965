//! Tool output that is not friendly text — binary data, invalid UTF-8, NUL
//! bytes, one huge line — through `bash`, exec tools and `read`, end to end
//! with `toolgate call`: every result is one valid JSON line with a notice,
//! never a panic, and nothing but results reaches stdout.

#[path = "common/run.rs"]
mod run;

use std::io::Write;
use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

const BINARY_NOTICE: &str = "is not all text:";

/// A workspace with a lax policy (so the odd commands below run), the
/// built-in manifests and two exec tools: `emit` runs `printf FORMAT` and
/// `emit_content` does the same in content mode.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let manifests = dir.path().join("manifests");
    std::fs::create_dir(&manifests).unwrap();
    for (name, text) in toolgate::config::embedded_manifests() {
        std::fs::write(manifests.join(name), text).unwrap();
    }
    for (name, output) in [("emit", "text"), ("emit_content", "content")] {
        std::fs::write(
            manifests.join(format!("{name}.toml")),
            format!(
                "name = \"{name}\"\ndescription = \"prints its format\"\n\
                 implementation = {{ exec = [\"printf\", \"{{format}}\"] }}\n\
                 [exec]\noutput = \"{output}\"\n\
                 [parameters]\ntype = \"object\"\nrequired = [\"format\"]\n\
                 properties.format = {{ type = \"string\" }}\n"
            ),
        )
        .unwrap();
    }
    std::fs::write(
        dir.path().join("policy.yaml"),
        "version: 1\npaths:\n  roots: [\".\", \"/dev\"]\ncommands:\n  unparsed: allow\n  default: allow\n",
    )
    .unwrap();
    dir
}

/// Runs one call; returns its result after checking that stdout held
/// exactly one line of valid JSON.
fn call(dir: &Path, tool: &str, args: Value) -> (Output, Value) {
    let args = args.to_string();
    let out = run::run_toolgate(
        dir,
        &[
            "call",
            "--policies",
            "policy.yaml",
            "--manifests",
            "manifests",
            "--tool",
            tool,
            "--args",
            &args,
        ],
        b"",
    );
    let text = std::str::from_utf8(&out.stdout).expect("stdout is UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "one result line: {text:.300}");
    let result: Value = serde_json::from_str(lines[0]).expect("valid JSON");
    assert_eq!(
        out.status.code(),
        Some(if result["is_error"] == true { 1 } else { 0 })
    );
    (out, result)
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or("")
}

#[test]
fn bash_binary_output_is_replaced_with_a_notice() {
    let dir = workspace();
    let (_, r) = call(
        dir.path(),
        "bash",
        json!({"command": "head -c 20000 /dev/urandom; printf 'tail\\000end'"}),
    );
    assert_eq!(r["is_error"], false, "{r}");
    let t = text(&r);
    assert!(!t.contains('\0'), "no NUL reaches the model");
    assert!(t.contains("tail\u{FFFD}end"), "{t:.200}");
    assert!(t.contains(BINARY_NOTICE), "{t:.200}");
}

#[test]
fn bash_nul_bytes_and_a_cut_character_are_shown_as_replacement() {
    let dir = workspace();
    let (_, r) = call(
        dir.path(),
        "bash",
        json!({"command": "printf 'a\\000b caf\\303'"}),
    );
    assert_eq!(
        text(&r),
        "a\u{FFFD}b caf\u{FFFD}\n\n[The output is not all text: 1 NUL byte and \
         1 byte sequence that is not UTF-8 are shown as \u{FFFD}.]"
    );
    // Plain text gets no notice.
    let (_, r) = call(
        dir.path(),
        "bash",
        json!({"command": "printf 'caf\\303\\251'"}),
    );
    assert_eq!(text(&r), "caf\u{e9}");
}

#[test]
fn bash_huge_single_line_keeps_its_end() {
    let dir = workspace();
    let (_, r) = call(
        dir.path(),
        "bash",
        json!({"command": "head -c 300000 /dev/zero | tr '\\0' 'a'; echo END"}),
    );
    let t = text(&r);
    assert!(
        t.contains("aaaEND"),
        "{:.100}",
        &t[t.len().saturating_sub(300)..]
    );
    assert!(
        t.contains("[Showing last 50.0KB of line 1"),
        "{:.400}",
        &t[t.len() - 300..]
    );
    assert!(t.len() < 60_000, "cut to the output limit: {}", t.len());
}

#[test]
fn a_command_holding_a_nul_byte_is_an_error_not_a_crash() {
    let dir = workspace();
    // The analyzer leaves it unparsed (allowed by this lax policy); the
    // operating system cannot run it.
    let (_, r) = call(dir.path(), "bash", json!({"command": "echo a\u{0}b"}));
    assert_eq!(r["is_error"], true);
    assert!(text(&r).contains("Failed to run bash"), "{r}");
    let (_, r) = call(dir.path(), "emit", json!({"format": "x\u{0}y"}));
    assert_eq!(r["is_error"], true);
    assert!(text(&r).contains("Failed to run printf"), "{r}");
}

#[test]
fn exec_tool_binary_output_gets_the_notice() {
    let dir = workspace();
    let (_, r) = call(dir.path(), "emit", json!({"format": "ok\\377\\376\\000"}));
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(
        text(&r),
        "ok\u{FFFD}\u{FFFD}\u{FFFD}\n\n[The output is not all text: 1 NUL byte and \
         2 byte sequences that are not UTF-8 are shown as \u{FFFD}.]"
    );
}

#[test]
fn exec_content_mode_rejects_binary_and_huge_output_with_a_reason() {
    let dir = workspace();
    let (_, r) = call(dir.path(), "emit_content", json!({"format": "\\377\\000["}));
    assert_eq!(r["is_error"], true);
    assert!(text(&r).contains("printed invalid content JSON"), "{r}");
    // One text block holding a NUL and invalid UTF-8 escapes is valid JSON.
    let (_, r) = call(
        dir.path(),
        "emit_content",
        json!({"format": "[{\"type\":\"text\",\"text\":\"a\\\\u0000b\"}]"}),
    );
    assert_eq!(r["is_error"], false, "{r}");
}

#[test]
fn read_of_a_binary_file_has_a_notice() {
    let dir = workspace();
    let mut bytes = b"not an image\x00\x01\x02\xff\xfe\n".to_vec();
    bytes.extend((0..=255u8).cycle().take(10_000));
    std::fs::write(dir.path().join("blob.bin"), &bytes).unwrap();
    let (_, r) = call(dir.path(), "read", json!({"path": "blob.bin"}));
    assert_eq!(r["is_error"], false, "{r}");
    let t = text(&r);
    assert!(!t.contains('\0'));
    assert!(
        t.starts_with("not an image\u{FFFD}\u{1}\u{2}\u{FFFD}\u{FFFD}\n"),
        "{t:.80}"
    );
    assert!(
        t.ends_with("shown as \u{FFFD}.]"),
        "{:.200}",
        &t[t.len() - 200..]
    );
}

#[test]
fn read_of_a_huge_single_line_points_to_bash() {
    let dir = workspace();
    let mut f = std::fs::File::create(dir.path().join("one-line.txt")).unwrap();
    f.write_all(&vec![b'x'; 2 << 20]).unwrap();
    drop(f);
    let (_, r) = call(dir.path(), "read", json!({"path": "one-line.txt"}));
    assert_eq!(
        text(&r),
        "[Line 1 is 2.0MB, exceeds 50.0KB limit. Use bash: sed -n '1p' one-line.txt | head -c 51200]"
    );
}

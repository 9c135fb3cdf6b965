//! The file tools `read` and `edit` against what Pi 1.6 answers, and what
//! `read` does beyond that.
//!
//! The cases in `tests/data/tools_files/{read,edit}_cases.json` were recorded
//! from Pi's own tools by `record_pi.mjs` next to them: every message, notice,
//! truncation detail, diff and resulting file is compared exactly. The tests
//! here add what Pi cannot record: images, bytes that are not UTF-8, large
//! files. Writes, the sandbox and concurrency: `tools_files_mutation.rs`.

#[path = "tools_files/workspace.rs"]
mod workspace;

use base64::Engine;
use serde::Deserialize;
use serde_json::{json, Value};
use toolgate::tools::{Content, ToolOutput};
use workspace::{generate, load_cases, text, Workspace};

#[derive(Debug, Deserialize)]
struct ReadCase {
    name: String,
    path: String,
    content: Value,
    args: Value,
    text: Option<String>,
    text_starts_with: Option<String>,
    text_ends_with: Option<String>,
    text_bytes: Option<usize>,
    truncation: Option<Value>,
    error: Option<String>,
}

#[tokio::test]
async fn read_matches_pi_cases() {
    let ws = Workspace::new();
    let cases: Vec<ReadCase> = load_cases("read_cases.json");
    assert!(cases.len() >= 25, "the case file lost cases");
    let mut failures = Vec::new();
    for case in &cases {
        ws.put(&case.path, generate(&case.content));
        let mut args = case.args.clone();
        args["path"] = json!(case.path);
        let got = ws.call("read", args).await;
        let problem = match (&got, &case.error) {
            (Err(e), Some(want)) if &e.message == want => None,
            (Err(e), _) => Some(format!("error {:?}", e.message)),
            (Ok(_), Some(want)) => Some(format!("succeeded, expected error {want:?}")),
            (Ok(out), None) => check_read_output(case, out),
        };
        if let Some(problem) = problem {
            failures.push(format!("{}: {problem}", case.name));
        }
    }
    assert!(
        failures.is_empty(),
        "{} read cases differ from Pi:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn check_read_output(case: &ReadCase, out: &ToolOutput) -> Option<String> {
    let got = text(out);
    if let Some(want) = &case.text {
        if got != want {
            return Some(format!("text {got:?}, expected {want:?}"));
        }
    }
    if let (Some(start), Some(end), Some(bytes)) = (
        &case.text_starts_with,
        &case.text_ends_with,
        case.text_bytes,
    ) {
        if !got.starts_with(start.as_str()) || !got.ends_with(end.as_str()) || got.len() != bytes {
            let tail = &got[got.len().saturating_sub(120)..];
            return Some(format!(
                "text of {} bytes ending {tail:?}, expected {bytes} ending {end:?}",
                got.len()
            ));
        }
    }
    let truncation = out.details.get("truncation");
    if truncation != case.truncation.as_ref() {
        return Some(format!(
            "details {truncation:?}, expected {:?}",
            case.truncation
        ));
    }
    None
}

#[derive(Debug, Deserialize)]
struct EditCase {
    name: String,
    path: String,
    content: Value,
    edits: Value,
    text: Option<String>,
    details: Option<Value>,
    error: Option<String>,
    after: String,
}

#[tokio::test]
async fn edit_matches_pi_cases() {
    let ws = Workspace::new();
    let cases: Vec<EditCase> = load_cases("edit_cases.json");
    assert!(cases.len() >= 40, "the case file lost cases");
    let mut failures = Vec::new();
    for case in &cases {
        ws.put(&case.path, generate(&case.content));
        let got = ws
            .call("edit", json!({"path": case.path, "edits": case.edits}))
            .await;
        let mut problems = Vec::new();
        match (&got, &case.error) {
            (Err(e), Some(want)) if &e.message == want => {}
            (Err(e), _) => problems.push(format!("error {:?}", e.message)),
            (Ok(_), Some(want)) => problems.push(format!("succeeded, expected error {want:?}")),
            (Ok(out), None) => {
                if Some(text(out)) != case.text.as_deref() {
                    problems.push(format!("text {:?}", text(out)));
                }
                if Some(&out.details) != case.details.as_ref() {
                    problems.push(format!(
                        "details {}\n  expected {}",
                        out.details,
                        case.details.clone().unwrap_or_default()
                    ));
                }
            }
        }
        let after = String::from_utf8_lossy(&ws.get(&case.path)).into_owned();
        if after != case.after {
            problems.push(format!("file {after:?}, expected {:?}", case.after));
        }
        if !problems.is_empty() {
            failures.push(format!("{}: {}", case.name, problems.join("; ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} edit cases differ from Pi:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A minimal PNG: signature, IHDR, IDAT, IEND (CRCs are not checked).
fn png_bytes() -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        png.extend_from_slice(&(data.len() as u32).to_be_bytes());
        png.extend_from_slice(kind);
        png.extend_from_slice(data);
        png.extend_from_slice(&[0; 4]);
    };
    chunk(b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0]);
    chunk(b"IDAT", &[0x78, 0x9c, 0x63, 0x60, 0, 0, 0, 2, 0, 1]);
    chunk(b"IEND", &[]);
    png
}

#[tokio::test]
async fn read_sends_images_by_their_magic_bytes() {
    let ws = Workspace::new();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        // The name does not matter, the bytes do.
        ("picture.txt", png_bytes(), "image/png"),
        (
            "photo.bin",
            b"\xff\xd8\xff\xe0\x00\x10JFIF\x00rest".to_vec(),
            "image/jpeg",
        ),
        (
            "anim.gif",
            b"GIF89a\x01\x00\x01\x00\x00\x00\x00;".to_vec(),
            "image/gif",
        ),
        (
            "pic.webp",
            b"RIFF\x1a\x00\x00\x00WEBPVP8 \x0e\x00\x00\x00".to_vec(),
            "image/webp",
        ),
    ];
    for (name, bytes, mime) in cases {
        ws.put(name, &bytes);
        let out = ws
            .call("read", json!({"path": name}))
            .await
            .expect("read image");
        let base64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
        assert_eq!(
            out.content,
            vec![
                Content::text(format!("Read image file [{mime}]")),
                Content::Image {
                    data: base64,
                    mime_type: mime.to_string()
                },
            ],
            "{name}"
        );
    }
    // A BMP is an image Pi converts to PNG; without a codec it is left out
    // with Pi's own notice rather than read as text.
    let mut bmp = vec![0u8; 58];
    bmp[..2].copy_from_slice(b"BM");
    bmp[2..6].copy_from_slice(&58u32.to_le_bytes());
    bmp[10..14].copy_from_slice(&54u32.to_le_bytes());
    bmp[14..18].copy_from_slice(&40u32.to_le_bytes());
    bmp[26] = 1;
    bmp[28] = 24;
    ws.put("old.bmp", &bmp);
    let out = ws
        .call("read", json!({"path": "old.bmp"}))
        .await
        .expect("read bmp");
    assert_eq!(
        text(&out),
        "Read image file [image/bmp]\n[Image omitted: could not be converted to a supported inline image format.]"
    );
    // A .png that is text is text.
    ws.put("fake.png", "not an image\n");
    let out = ws
        .call("read", json!({"path": "fake.png"}))
        .await
        .expect("read text");
    assert_eq!(text(&out), "not an image\n");
}

#[tokio::test]
async fn read_decodes_bytes_that_are_not_utf8_like_node() {
    let ws = Workspace::new();
    // Pi (Node's decoder) shows "a\u{FFFD}\u{FFFD}\nb" for these bytes.
    ws.put("latin1.txt", b"a\xff\xfe\nb");
    let out = ws
        .call("read", json!({"path": "latin1.txt"}))
        .await
        .expect("read");
    assert_eq!(text(&out), "a\u{FFFD}\u{FFFD}\nb");
    // A truncated multi-byte character at the end of the file.
    ws.put("cut.txt", b"caf\xc3");
    let out = ws
        .call("read", json!({"path": "cut.txt"}))
        .await
        .expect("read");
    assert_eq!(text(&out), "caf\u{FFFD}");
}

#[tokio::test]
async fn read_errors_name_the_path() {
    let ws = Workspace::new();
    let err = ws
        .call("read", json!({"path": "missing.txt"}))
        .await
        .unwrap_err();
    let abs = ws.path("missing.txt");
    assert_eq!(
        err.message,
        format!(
            "ENOENT: no such file or directory, access '{}'",
            abs.display()
        )
    );
    std::fs::create_dir(ws.path("dir")).expect("dir");
    let err = ws.call("read", json!({"path": "dir"})).await.unwrap_err();
    assert_eq!(
        err.message,
        "EISDIR: illegal operation on a directory, read"
    );
}

#[tokio::test]
async fn read_takes_pis_path_spellings() {
    let ws = Workspace::new();
    ws.put("sub/notes.md", "hello\n");
    for spelling in [
        "@sub/notes.md",
        "./sub/../sub/notes.md",
        &format!("file://{}", ws.path("sub/notes.md").display()),
    ] {
        let out = ws
            .call("read", json!({"path": spelling}))
            .await
            .expect(spelling);
        assert_eq!(text(&out), "hello\n", "{spelling}");
    }
}

#[tokio::test]
async fn read_streams_large_files() {
    let ws = Workspace::new();
    // Well over the size read inline: this goes through the chunked reader.
    let content: String = (1..=60_000).map(|i| format!("line {i}\n")).collect();
    ws.put("big.log", &content);
    let out = ws
        .call("read", json!({"path": "big.log"}))
        .await
        .expect("read");
    assert!(text(&out)
        .ends_with("line 2000\n\n[Showing lines 1-2000 of 60001. Use offset=2001 to continue.]"));
    let out = ws
        .call(
            "read",
            json!({"path": "big.log", "offset": 59_999, "limit": 5}),
        )
        .await
        .expect("read");
    assert_eq!(text(&out), "line 59999\nline 60000\n");
}

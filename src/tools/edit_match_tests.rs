//! Unit tests of edit matching; the behaviour vectors recorded from Pi are in
//! `tests/tools_files.rs`.

use super::*;

fn spec(old: &str, new: &str) -> EditSpec {
    EditSpec {
        old_text: old.to_string(),
        new_text: new.to_string(),
    }
}

#[test]
fn fuzzy_view_is_pis() {
    assert_eq!(
        normalize_for_fuzzy_match(
            "say \u{201C}hi\u{201D} \u{2014} it\u{2019}s\u{A0}ok  \t\nnext\u{3000}"
        ),
        "say \"hi\" - it's ok\nnext"
    );
    // NFKC folds compatibility characters: the ligature, full-width letters.
    assert_eq!(normalize_for_fuzzy_match("\u{FB01}le \u{FF21}"), "file A");
    // JavaScript's trimEnd strips U+FEFF and keeps U+0085.
    assert_eq!(
        normalize_for_fuzzy_match("a\u{FEFF}\nb\u{85}"),
        "a\nb\u{85}"
    );
}

#[test]
fn line_endings_follow_the_replaced_line() {
    let original = "one\ntwo\r\nthree\n";
    let normalized = normalize_to_lf(original);
    let applied = apply_edits(&normalized, &[spec("two\nthree", "2\n3")], "m.txt").unwrap();
    assert_eq!(
        apply_replacements_to_original(original, &applied.replacements),
        "one\n2\r\n3\n"
    );
}

#[test]
fn classic_mac_line_endings_are_kept() {
    let original = "a\rb\rc";
    let normalized = normalize_to_lf(original);
    let applied = apply_edits(&normalized, &[spec("b\nc", "B\nC")], "mac.txt").unwrap();
    assert_eq!(
        apply_replacements_to_original(original, &applied.replacements),
        "a\rB\rC"
    );
}

#[test]
fn a_kept_cr_does_not_merge_with_an_inserted_lf() {
    // "x\r" stays (a stray CR inside an LF file), the insertion starts with
    // LF: without care the two would become one CRLF line break.
    let original = "x\ry\nz\n";
    let normalized = normalize_to_lf(original);
    assert_eq!(normalized, "x\ny\nz\n");
    let applied = apply_edits(&normalized, &[spec("y\n", "\nY\n")], "cr.txt").unwrap();
    let out = apply_replacements_to_original(original, &applied.replacements);
    assert_eq!(normalize_to_lf(&out), applied.new_content);
}

#[test]
fn fuzzy_edits_rewrite_only_touched_lines() {
    let content = "keep \u{201C}this\u{201D}  \nsay \u{201C}hi\u{201D}  \nnext line\n";
    let applied = apply_edits(
        content,
        &[spec("say \"hi\"\nnext", "say 'yo'\nnext")],
        "f.txt",
    )
    .unwrap();
    assert_eq!(
        applied.new_content,
        "keep \u{201C}this\u{201D}  \nsay 'yo'\nnext line\n"
    );
}

#[test]
fn uniqueness_is_counted_in_the_fuzzy_view() {
    let err = apply_edits("x  \nx\n", &[spec("x\n", "y\n")], "d.txt").unwrap_err();
    assert_eq!(
        err,
        "Found 2 occurrences of the text in d.txt. The text must be unique. Please provide more context to make it unique."
    );
}

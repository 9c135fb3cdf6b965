//! Per-repetition caps and their overflow: the parts the data-driven
//! fidelity cases (tests/redact_fidelity.rs) do not reach directly.

use super::*;
use crate::policy::redact::caps::has_run;
use proptest::prelude::*;

fn naive_run(text: &[u8], set: &[bool; 256], len: usize) -> bool {
    let mut run = 0;
    for &b in text {
        run = if set[b as usize] { run + 1 } else { 0 };
        if run >= len {
            return true;
        }
    }
    len == 0
}

proptest! {
    #[test]
    fn sampled_run_check_agrees_with_a_scan(
        text in proptest::collection::vec(prop_oneof![Just(b'a'), Just(b'b'), Just(b' ')], 0..300),
        len in 0usize..40,
    ) {
        let mut set = [false; 256];
        set[b'a' as usize] = true;
        set[b'b' as usize] = true;
        prop_assert_eq!(has_run(&text, &set, len), naive_run(&text, &set, len));
    }
}

#[test]
fn a_long_lazy_body_ends_at_its_suffix() {
    // Longer than any cap: the overflow finds `KEY-----` as the regex would.
    let r = Redactor::compile(
        false,
        &[rule(
            "k",
            r"-----BEGIN KEY-----[\s\S]{4,}?END KEY-----",
            &["-----begin"],
            0,
        )],
    )
    .unwrap();
    let body = gen(B64, 3000, 1);
    let text = format!("a\n-----BEGIN KEY-----\n{body}\nEND KEY-----\ntail {body}");
    assert_eq!(r.redact(&text), format!("a\n[REDACTED:k]\ntail {body}"));
}

#[test]
fn a_capped_repetition_around_the_secret_is_reported() {
    let lazy = LazyRedactor::with_imports(
        false,
        Vec::new(),
        vec![rule("c", r"curl\b.*-u ([a-z]{4,})", &["curl"], 1)],
        Vec::new(),
    )
    .unwrap();
    let limits = lazy.limits();
    assert_eq!(limits.len(), 1, "{limits:?}");
    assert_eq!(limits[0].id, "c");
    assert!(
        limits[0].message.contains("capped at"),
        "{}",
        limits[0].message
    );
    // The secret's own repetition is not a limit: it keeps matching.
    let r = lazy.get();
    let long = gen(LETTERS, 2000, 2).to_lowercase();
    assert_eq!(
        r.redact(&format!("curl x -u {long} y")),
        "curl x -u [REDACTED:c] y"
    );
}

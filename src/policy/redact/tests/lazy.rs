//! Rules build their automata the first time a scan needs them, and
//! redact exactly as when every rule is built up front.

use super::streaming::{atoms, streamed};
use super::*;
use proptest::prelude::*;

fn lazy_defaults() -> LazyRedactor {
    LazyRedactor::new(true, Vec::new()).expect("the built-in set checks")
}

fn built(r: &Redactor) -> Vec<&str> {
    r.built_rule_ids().collect()
}

/// The built-in rules a scan of `text` wakes: those with a keyword in it.
fn woken(text: &str) -> Vec<String> {
    let lower = text.to_ascii_lowercase();
    default_rules()
        .into_iter()
        .filter(|r| r.keywords.is_empty() || r.keywords.iter().any(|k| lower.contains(k)))
        .map(|r| r.id)
        .collect()
}

#[test]
fn only_the_rules_a_text_wakes_are_built() {
    let lazy = lazy_defaults();
    let r = lazy.get();
    assert_eq!(r.len(), default_rules().len());
    assert!(built(r).is_empty(), "{:?}", built(r));
    assert!(matches!(
        r.redact("fn main() {\n    let x = compute(1, 2);\n}\n"),
        Cow::Borrowed(_)
    ));
    // The two built-in rules without keywords run over every text.
    assert_eq!(built(r), ["discord-bot-token", "twilio-api-key"]);

    let text = format!("aws_access_key_id = AKIA{}\n", gen(UPPER_B32, 16, 2));
    assert_eq!(r.redact(&text), defaults().redact(&text));
    assert_eq!(
        r.redact(&text),
        "aws_access_key_id = [REDACTED:aws-access-key-id]\n"
    );
    assert_eq!(built(r), woken(&text));
    assert!(built(r).len() <= 4, "{:?}", built(r));

    // A second text builds only what it adds.
    let ghp = format!("ghp_{}", gen(ALNUM, 36, 1));
    assert_eq!(r.redact(&ghp), "[REDACTED:github-pat]");
    let mut expected = woken(&format!("{text}\n{ghp}"));
    expected.retain(|id| woken(&text).contains(id) || woken(&ghp).contains(id));
    assert_eq!(built(r), expected);
}

#[test]
fn a_rule_without_keywords_is_built_by_any_scan() {
    let lazy = LazyRedactor::new(
        false,
        vec![
            rule("no-keywords", r"a{2,5}b", &[], 0),
            rule("keyword", r"k=[ab]+", &["k="], 0),
        ],
    )
    .unwrap();
    let r = lazy.get();
    assert!(built(r).is_empty());
    assert!(matches!(r.redact("xyz"), Cow::Borrowed(_)));
    assert_eq!(built(r), ["no-keywords"]);
    assert_eq!(
        r.redact("aab k=ab"),
        "[REDACTED:no-keywords] [REDACTED:keyword]"
    );
    assert_eq!(built(r), ["no-keywords", "keyword"]);
}

#[test]
fn compile_builds_every_rule() {
    assert_eq!(built(defaults()).len(), defaults().len());
}

/// Where a stream's hold-back is decided before a rule is built, the bound
/// known from the analysis stands in for the built regex's longest match;
/// for the built-in set they are the same, so nothing is held back longer.
#[test]
fn built_in_bounds_are_exact() {
    for rule in &defaults().rules {
        assert_eq!(rule.bound, rule.built().max_len, "{}", rule.id);
        assert!(rule.built().error.is_none(), "{}", rule.id);
    }
}

#[test]
fn lazily_built_rules_redact_like_eagerly_built_ones() {
    let atoms = atoms();
    let text = atoms.join(" ") + &atoms.join("");
    let lazy = lazy_defaults();
    assert_eq!(lazy.get().redact(&text), defaults().redact(&text));
    assert_eq!(
        lazy.get().matching_rules(&text),
        defaults().matching_rules(&text)
    );
    // A stream, over a redactor nothing was built in yet.
    let lazy = lazy_defaults();
    let cuts: Vec<usize> = (1..text.len() / 7).map(|i| i * 7).collect();
    assert_eq!(streamed(lazy.get(), &text, &cuts), defaults().redact(&text));
}

#[test]
fn threads_share_a_lazy_redactor() {
    let lazy = lazy_defaults();
    let atoms = atoms();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (lazy, atoms) = (&lazy, &atoms);
            s.spawn(move || {
                for i in 0..atoms.len() {
                    let text = format!("{} {}", atoms[(i + t) % atoms.len()], atoms[i]);
                    assert_eq!(lazy.get().redact(&text), defaults().redact(&text));
                }
            });
        }
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_text_redacts_alike_lazily_built(
        picks in prop::collection::vec(0usize..26, 0..30),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let atoms = atoms();
        let text: String = picks.iter().map(|&i| atoms[i % atoms.len()].as_str()).collect();
        let lazy = lazy_defaults();
        prop_assert_eq!(streamed(lazy.get(), &text, &cuts), defaults().redact(&text).into_owned());
        let lazy = lazy_defaults();
        prop_assert_eq!(lazy.get().redact(&text), defaults().redact(&text));
        prop_assert_eq!(built(lazy.get()), woken(&text));
    }
}

/// A rule whose regex passes the checks but whose automaton is over the
/// size limit at every repetition cap.
fn unbuildable_rule() -> RedactRuleSpec {
    rule("huge-automaton", r"k=\p{L}{1000}", &["k="], 0)
}

#[test]
fn a_rule_that_cannot_be_built_is_an_error_where_it_is_built_up_front() {
    let errors = compile_errors(&[unbuildable_rule()]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].id, "huge-automaton");
    assert_eq!(errors[0].message, "regex is too large; simplify it");
    // A policy's own rules are built at load.
    let errors = LazyRedactor::new(false, vec![unbuildable_rule()]).unwrap_err();
    assert_eq!(errors[0].id, "huge-automaton");
}

#[test]
fn an_imported_rule_that_cannot_be_built_fails_closed() {
    let lazy = LazyRedactor::with_imports(
        false,
        vec![rule("kv", r"v=[ab]{4}", &["v="], 0)],
        vec![unbuildable_rule()],
        Vec::new(),
    )
    .expect("imported rules are only checked for syntax at load");
    let r = lazy.get();
    let (before, after) = ("x".repeat(5000), "y".repeat(5000));
    let text = format!("{before} k=abc é v=abab {after}");
    let k = text.find("k=").unwrap();
    let reach = r.rules[1].bound;
    assert_eq!(reach, 2 + 4 * 1000);
    // Everything its regex could reach from its keyword is redacted, in
    // one piece, the other rule's secret included.
    let expected = format!(
        "{}[REDACTED:huge-automaton]{}",
        &text[..k - reach],
        &text[k + reach..]
    );
    assert_eq!(r.redact(&text), expected);
    assert_eq!(r.matching_rules(&text), ["kv", "huge-automaton"]);
    for size in [1, 7, 100, 4096] {
        let cuts: Vec<usize> = (1..text.len() / size + 1).map(|i| i * size).collect();
        assert_eq!(streamed(r, &text, &cuts), expected, "chunks of {size}");
    }
    // Text without its keyword is untouched, and `check` hears of it.
    assert_eq!(r.redact("v=abab"), "[REDACTED:kv]");
    let unbuildable = lazy.unbuildable();
    assert_eq!(unbuildable.len(), 1);
    assert_eq!(unbuildable[0].id, "huge-automaton");
    assert_eq!(unbuildable[0].message, "regex is too large; simplify it");
    assert!(lazy.dropped().is_empty());
}

/// An allowlist whose regex passes the syntax check but is over the size
/// limit once built; built, it would allow `abab`.
fn unbuildable_allowlist() -> AllowlistSpec {
    AllowlistSpec {
        regexes: vec![r"abab|\p{L}{1000}x".to_string()],
        ..AllowlistSpec::default()
    }
}

#[test]
fn allowlist_regexes_are_built_when_a_finding_reaches_them() {
    let mut kv = rule("kv", r"v=[ab]{4}", &["v="], 0);
    kv.allowlists = vec![AllowlistSpec {
        regexes: vec!["abab".to_string()],
        ..AllowlistSpec::default()
    }];
    let lazy = LazyRedactor::new(false, vec![kv]).unwrap();
    let r = lazy.get();
    assert!(!r.rules[0].allowlists[0].is_built());
    assert_eq!(r.redact("no finding here"), "no finding here");
    assert!(!r.rules[0].allowlists[0].is_built());
    assert_eq!(r.redact("v=abab v=baba"), "v=abab [REDACTED:kv]");
    assert!(r.rules[0].allowlists[0].is_built());
}

#[test]
fn an_allowlist_that_cannot_be_built_is_an_error_up_front_and_never_applies_later() {
    let mut kv = rule("kv", r"v=[ab]{4}", &["v="], 0);
    kv.allowlists = vec![unbuildable_allowlist()];
    let errors = compile_errors(std::slice::from_ref(&kv));
    assert!(errors[0].message.contains("is too large"), "{errors:?}");
    assert!(unbuildable_allowlist().check().is_err());
    // Imported, it is only checked for syntax at load; at the finding it
    // cannot be built, so it does not apply: the secret stays redacted.
    let lazy = LazyRedactor::with_imports(false, Vec::new(), vec![kv], Vec::new())
        .expect("imported rules are only checked for syntax at load");
    assert_eq!(lazy.get().redact("v=abab"), "[REDACTED:kv]");
}

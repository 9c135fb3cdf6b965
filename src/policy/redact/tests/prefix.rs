//! Class prefixes: every match of a rule begins with its prefix (so a
//! position without it starts no match), and a rule without keywords that
//! runs only around its prefix redacts exactly what it redacts over all
//! text.

use super::super::prefix::{ByteSet, MAX_PREFIX};
use super::bounded::{analyze, build};
use super::streaming::{atoms, streamed};
use super::*;
use proptest::prelude::*;
use regex_automata::{Anchored, Input};

/// Regexes of many shapes, each with a few strings it matches.
fn shapes() -> Vec<(String, Vec<String>)> {
    let mut shapes: Vec<(String, Vec<String>)> = [
        (r"(?:ab|cd)[0-9]{3}x", &["ab123x", "cd000x"][..]),
        (r"\bfoo(?:bar)?baz", &["foobaz", "foobarbaz"]),
        (r"(?i)abc[de]{2,3}", &["ABCde", "aBcDdE"]),
        (r"[α-ω]x[a-z]", &["αxa", "ωxz"]),
        (r"(a|bc)d[0-9]", &["ad1", "bcd2"]),
        (r"x{2}(?:y|z){0,2}w", &["xxw", "xxyzw"]),
        (r"(?:\b|^)AKIA[A-Z0-9]{16}", &["AKIAABCDEFGHIJKLMNOP"]),
        (r"é[a-z]{4}", &["éabcd"]),
        (r"[^a]bc", &["xbc", "ébc"]),
        (r"(?:k|K)ey_[0-9a-f]{20}", &["key_0123456789abcdef0123"]),
        (r"(?s:.)ab", &["\nab", "xab"]),
        (r"(?:)q(?:\b)[.]{2}", &["q..", "q.."]),
        (r"m(?:n{2,}|o)p", &["mop", "mnnnp"]),
        (r"(?:aa|b)c", &["aac", "bc"]),
        (r"(?i)k[a-z]{2}", &["kab", "\u{212a}ab"]),
    ]
    .iter()
    .map(|(re, ex)| (re.to_string(), ex.iter().map(|s| s.to_string()).collect()))
    .collect();
    // The built-in rules, with the secrets the streaming tests use.
    for r in default_rules() {
        shapes.push((r.regex, atoms()));
    }
    shapes
}

/// Pieces for haystacks: the examples, the examples with a byte changed,
/// and bytes the regexes are made of.
fn hay(examples: Vec<String>) -> impl Strategy<Value = Vec<u8>> {
    let pool: Vec<Vec<u8>> = examples.into_iter().map(String::into_bytes).collect();
    let piece = prop_oneof![
        (0..pool.len()).prop_map({
            let pool = pool.clone();
            move |i| pool[i].clone()
        }),
        (0..pool.len(), any::<usize>(), any::<u8>()).prop_map(move |(i, at, b)| {
            let mut p = pool[i].clone();
            if !p.is_empty() {
                let n = p.len();
                p[at % n] = b;
            }
            p
        }),
        prop::collection::vec(
            prop::sample::select(b"abcdxyzABCMNODTjzSK019_-.:/ \n\xc3\xa9".to_vec()),
            0..12
        ),
    ];
    prop::collection::vec(piece, 0..30).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Wherever a regex can match (anchored there), its class prefix begins.
    #[test]
    fn every_match_begins_with_the_class_prefix(
        (pattern, hay) in (0..shapes().len()).prop_flat_map(|i| {
            let (pattern, examples) = shapes().swap_remove(i);
            (Just(pattern), hay(examples))
        })
    ) {
        let analyzed = analyze(&pattern, SecretGroup::Whole).expect("the shapes are valid");
        let classes = analyzed.class_prefix();
        let regex = build(&analyzed).expect("the shapes build").regex;
        for at in 0..=hay.len() {
            let input = Input::new(&hay).span(at..hay.len()).anchored(Anchored::Yes);
            if regex.search(&input).is_some() {
                prop_assert!(
                    hay.len() >= at + classes.len(),
                    "{pattern}: a match at {at} is shorter than the prefix"
                );
                for (i, c) in classes.iter().enumerate() {
                    prop_assert!(c.contains(hay[at + i]), "{pattern} at {at}+{i} in {hay:?}");
                }
            }
        }
    }
}

#[test]
fn prefixes_of_the_rules_without_keywords() {
    let prefix = |re: &str| {
        analyze(re, SecretGroup::Whole)
            .expect("valid")
            .class_prefix()
    };
    let set = |bytes: &[u8]| ByteSet::of(bytes);
    let hex = set(b"0123456789abcdefABCDEF");
    let twilio = prefix(r"\bSK[0-9a-fA-F]{32}\b");
    assert_eq!(twilio.len(), MAX_PREFIX);
    assert_eq!(&twilio[..3], &[set(b"S"), set(b"K"), hex]);
    let discord = default_rules()
        .into_iter()
        .find(|r| r.id == "discord-bot-token")
        .expect("a built-in rule");
    let discord = prefix(&discord.regex);
    assert_eq!(&discord[..2], &[set(b"MNO"), set(b"DTjz")]);
    // Unequal branches: only what both begin with; a leading `.*` or an
    // optional part: nothing.
    assert_eq!(prefix(r"(a|bc)d"), vec![set(b"ab")]);
    assert!(prefix(r".*secret").is_empty());
    assert!(prefix(r"(?:x)?yz").is_empty());
    assert_eq!(prefix(r"x{2}(?:y|z){0,2}w"), vec![set(b"x"); 2]);
}

/// The built-in set with every rule without keywords over all text, as
/// before class prefixes.
fn uncovered_defaults() -> &'static Redactor {
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(|| {
        let mut r = Redactor::compile(true, &[]).expect("built-in rules compile");
        if let Some(k) = &mut r.keywords {
            k.drop_prefixes();
        }
        r
    })
}

#[test]
fn the_keywordless_built_in_rules_are_covered_where_the_byte_tables_run() {
    let k = defaults().keywords.as_ref().expect("keywords");
    let index = |id: &str| {
        defaults()
            .rule_ids()
            .position(|r| r == id)
            .expect("a built-in rule") as u32
    };
    if fingerprint::avx2() && permute::avx512_vbmi() {
        assert!(k.covers(index("twilio-api-key")));
        assert!(k.covers(index("discord-bot-token")));
    }
    let u = uncovered_defaults().keywords.as_ref().expect("keywords");
    assert!(!u.covers(index("twilio-api-key")));
    assert!(!u.covers(index("discord-bot-token")));
}

/// Discord and Twilio tokens, whole and cut short, their near misses, and
/// text around them.
fn token_atoms() -> Vec<String> {
    let discord = format!(
        "NT{}.{}.{}",
        gen(ALNUM, 23, 4),
        gen(URLSAFE, 6, 5),
        gen(URLSAFE, 30, 6)
    );
    let twilio = format!("SK{}", gen(HEX, 32, 3));
    let mut atoms = atoms();
    atoms.extend([
        discord.clone(),
        discord[..30].to_string(),
        discord.replace('.', "_"),
        format!("x{discord}"),
        format!("{discord}-"),
        twilio.clone(),
        twilio[..20].to_string(),
        format!("{twilio}g"),
        format!("a{twilio}"),
        "SK".into(),
        "MTj".into(),
        "Oz".into(),
        ".".into(),
        "-".into(),
    ]);
    atoms
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Running the rules without keywords only around their prefixes finds
    /// what running them over all text finds, whole and streamed.
    #[test]
    fn covered_rules_redact_as_over_all_text(
        picks in prop::collection::vec(any::<usize>(), 0..40),
        noise in prop::collection::vec("[a-zA-Z0-9_ .\\-]{0,20}", 0..40),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let atoms = token_atoms();
        let text: String = picks
            .iter()
            .zip(noise.iter().chain(std::iter::repeat(&String::new())))
            .map(|(&i, n)| format!("{}{n}", atoms[i % atoms.len()]))
            .collect();
        let whole = uncovered_defaults().redact(&text);
        prop_assert_eq!(&defaults().redact(&text), &whole);
        prop_assert_eq!(
            defaults().matching_rules(&text),
            uncovered_defaults().matching_rules(&text)
        );
        prop_assert_eq!(streamed(defaults(), &text, &cuts), whole.into_owned());
    }
}

/// A policy of only a rule without keywords: the prefilter then has no
/// keywords at all, only the prefix.
#[test]
fn a_set_of_one_keywordless_rule() {
    let r =
        Redactor::compile(false, &[rule("t", r"\bSK[0-9a-fA-F]{32}\b", &[], 0)]).expect("compiles");
    let key = format!("SK{}", gen(HEX, 32, 3));
    for text in [
        format!("a {key} b"),
        key.clone(),
        format!("{key} {key},{key}"),
        format!("{}-{key}", "x".repeat(100)),
    ] {
        let want = text.replace(&key, "[REDACTED:t]");
        assert_eq!(r.redact(&text), want, "{text}");
        for step in [1, 7, 64] {
            let cuts: Vec<usize> = (0..text.len()).step_by(step).collect();
            assert_eq!(streamed(&r, &text, &cuts), want, "{text} by {step}");
        }
    }
}

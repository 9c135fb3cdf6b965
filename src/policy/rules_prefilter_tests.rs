//! The prefilter never says "cannot match" where the regex matches.

use proptest::prelude::*;
use proptest::strategy::ValueTree;

use super::Prefilter;
use crate::policy::rules::PolicyRegex;
use crate::policy::rules_regex::build_regex;

/// The team fixture's rule regexes (benches/fixtures/team-policy).
const TEAM: [&str; 5] = [
    r"(?i)\b(psql|mysql|mongosh?|redis-cli)\b.*\b(prod|production)[\w.-]*",
    r"(?i)\b(api[_-]?key|token|passw(or)?d|secret)\s*=\s*[^\s$]{8,}",
    r"kubectl\s.*--context[= ]?(prod|production)\b",
    r"-----BEGIN (RSA |EC |OPENSSH |DSA )?PRIVATE KEY-----",
    r"\b(AKIA|ASIA)[0-9A-Z]{16}\b|\bghp_[0-9A-Za-z]{36}\b",
];

/// Patterns written to catch an unsound skip.
const ADVERSARIAL: [&str; 34] = [
    r"(?i)secret",
    r"(?i)kubectl",
    r"(?i)sk",
    r"(?i)[k]ey",
    r"[Kk]ey",
    r"(?i:ab)c|d",
    r"colou?r",
    r"passw(or)?d",
    r"(a|b)c",
    r"(?i)x(y|)z",
    r"a*b",
    r"ab|",
    r"|ab",
    r"\bword\b",
    r"foo.*bar",
    r"(?i)a(?-i)b",
    r"a{2,}b",
    r"(foo)+bar",
    r"(?x) f o o  # a comment",
    r"a\.b",
    r"[.]x",
    r"\d+px",
    r"(?m)^rm\s",
    r"(?s)a.b",
    r"(?U)ab+",
    r"(?i)STRASSE",
    r"ſ",
    r"(?i)ſecret",
    r"(?i)\x{17F}ecret",
    r"(?i)\u{212A}ubectl",
    r"(?i)[\x{100}-\x{200}]ecret",
    r"\pL+ey",
    r"(?i)(?u:\w)ey",
    r"(?-u:k)ey",
];

/// Texts that match some of the patterns, in some of the ways.
const TEXTS: [&str; 30] = [
    "ls -la",
    "git reset --hard",
    "psql -h db.prod.internal -U app",
    "PSQL -h PROD",
    "mysql --host=production-replica",
    "PASSWORD=hunter2hunter2 ./run",
    "deploy --api_key=abcd1234efgh",
    "ſecret=abcdefgh12",
    "\u{212A}ubectl get pods --context prod",
    "kubectl get pods --context prod",
    "KUBECTL",
    "\u{212A}ey and Key",
    "ſk",
    "color colour",
    "passwd password",
    "ac bc xz xyz XYZ",
    "aab b",
    "foofoobar",
    "a word here",
    "a.b .x 12px",
    "rm -rf /",
    "a\nb",
    "STRASSE strasse straſſe",
    "abc aBc ABc",
    "-----BEGIN RSA PRIVATE KEY-----",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",
    "éy",
    "",
    "d",
];

/// A text and the variants a case-insensitive or Unicode match could hide in.
fn variants(text: &str) -> Vec<String> {
    vec![
        text.to_string(),
        text.to_uppercase(),
        text.to_lowercase(),
        text.replace('s', "ſ").replace('k', "\u{212A}"),
        format!("x {text} y"),
    ]
}

/// Fails when the prefilter of `pattern` skips `text` although it matches.
fn assert_sound(pattern: &str, text: &str) {
    let regex = build_regex(pattern).unwrap();
    if regex.is_match(text) {
        assert!(
            Prefilter::new(pattern).may_match(text),
            "`{pattern}` matches {text:?} but the prefilter skipped it"
        );
    }
}

#[test]
fn never_skips_a_match_of_the_written_cases() {
    let mut matches = 0;
    let mut skips = 0;
    for pattern in TEAM.iter().chain(&ADVERSARIAL) {
        let regex = build_regex(pattern).unwrap();
        let prefilter = Prefilter::new(pattern);
        for text in TEXTS.iter().flat_map(|t| variants(t)) {
            let matched = regex.is_match(&text);
            let may = prefilter.may_match(&text);
            assert!(
                may || !matched,
                "`{pattern}` matches {text:?} but the prefilter skipped it"
            );
            matches += usize::from(matched);
            skips += usize::from(!may);
        }
    }
    // The cases reach both sides: many matches, and many skips.
    assert!(matches > 100, "{matches} matches");
    assert!(skips > 500, "{skips} skips");
}

#[test]
fn unicode_case_folding_is_never_skipped() {
    // `(?i)s` matches the long s and `(?i)k` the Kelvin sign: the text is not
    // ASCII, so the prefilter cannot tell and says "may match".
    for (pattern, text) in [
        ("(?i)secret", "ſecret"),
        ("(?i)kubectl", "\u{212A}ubectl"),
        ("(?i)[k]ey", "\u{212A}ey"),
    ] {
        assert!(build_regex(pattern).unwrap().is_match(text));
        assert!(!Prefilter::new(pattern).is_empty());
        assert!(Prefilter::new(pattern).may_match(text), "{pattern} {text}");
        assert!(!Prefilter::new(pattern).may_match("nothing here"));
    }
    // A pattern that writes a character folding to ASCII has no prefilter.
    for pattern in [
        "(?i)ſecret",
        r"(?i)\x{17F}ecret",
        r"(?i)\u{212A}ubectl",
        r"(?i)[\x{100}-\x{200}]ecret",
        r"\pL+ey",
    ] {
        assert!(Prefilter::new(pattern).is_empty(), "{pattern}");
    }
    assert!(build_regex("(?i)ſecret").unwrap().is_match("secret"));
    assert!(build_regex(r"(?i)[\x{100}-\x{200}]ecret")
        .unwrap()
        .is_match("Secret"));
}

#[test]
fn case_insensitive_literals_match_in_any_ascii_case() {
    let p = Prefilter::new("(?i)secret");
    for text in ["SECRET", "secret", "SeCrEt", "x=sEcReT"] {
        assert!(p.may_match(text), "{text}");
    }
    assert!(!p.may_match("secre t"));
    // Case-sensitive letters are searched in either case too (no flag is
    // followed): the prefilter lets more through, and the regex says no.
    let p = Prefilter::new("kubectl");
    assert!(p.may_match("kubectl get") && p.may_match("KUBECTL get"));
    assert!(!p.may_match("kube ctl get"));
    assert!(!build_regex("kubectl").unwrap().is_match("KUBECTL get"));
    // Scoped and toggled flags need not be followed either.
    for pattern in ["(?i:ab)c", "a(?i)b(?-i)c", "(?x) a b c", "(?i)a|(?-i)abc"] {
        let p = Prefilter::new(pattern);
        assert!(p.may_match("ABC") && p.may_match("abc"), "{pattern}");
    }
}

#[test]
fn optional_parts_and_alternations_require_only_what_every_match_holds() {
    let p = Prefilter::new("passw(or)?d");
    assert!(p.may_match("passwd") && p.may_match("password"));
    let p = Prefilter::new("(psql|mysql)");
    assert!(p.may_match("mysql") && p.may_match("psql") && !p.may_match("sql"));
    // A branch with no literal: nothing is required.
    assert!(Prefilter::new(r"(psql|\w+)").is_empty());
    assert!(Prefilter::new("(psql|)").is_empty());
    assert!(Prefilter::new("a*").is_empty());
    // Zero-width assertions do not break a literal run.
    assert!(
        Prefilter::new(r"a\bb").may_match("ab") || !build_regex(r"a\bb").unwrap().is_match("ab")
    );
}

#[test]
fn the_team_rules_skip_commands_without_their_literals() {
    for pattern in &TEAM[..3] {
        let p = Prefilter::new(pattern);
        assert!(!p.is_empty(), "{pattern}");
        for text in ["ls -la", "git reset --hard", "cargo test"] {
            assert!(!p.may_match(text), "{pattern} {text}");
        }
    }
}

#[test]
fn a_regex_on_first_use_compiles_only_when_its_literals_are_there() {
    let regex = PolicyRegex::on_first_use(TEAM[0]);
    assert!(!regex.is_match("ls -la"));
    assert!(!regex.is_compiled(), "skipped without compiling");
    assert!(regex.is_match("psql -h db.prod.internal"));
    assert!(regex.is_compiled());
    // A regex compiled at load is never filtered (it matches as compiled).
    let now = PolicyRegex::compiled(build_regex("(?i)secret").unwrap());
    assert!(now.is_match("ſecret"));
}

/// A small regex over the letters the adversarial texts use.
fn pattern() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        prop::sample::select(vec![
            "a", "b", "k", "s", "K", "S", "-", "=", "_", " ", r"\w", r"\s", r"\d", r"\b", ".",
            "[ab]", "[^a]", "[a-c]", "[kK]", "[=-]", r"\.",
        ])
        .prop_map(str::to_string),
        "[abks]{1,4}".prop_map(|s| s),
    ];
    let tree = leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| v.concat()),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| format!("({})", v.join("|"))),
            (
                inner.clone(),
                prop::sample::select(vec!["?", "*", "+", "{2}", "{0,2}", "{1,}"])
            )
                .prop_map(|(r, q)| format!("(?:{r}){q}")),
            (
                inner,
                prop::sample::select(vec!["(?i:", "(?-i:", "(?s:", "(?:"])
            )
                .prop_map(|(r, g)| format!("{g}{r})")),
        ]
    });
    (any::<bool>(), tree).prop_map(|(ci, p)| if ci { format!("(?i){p}") } else { p })
}

/// A short text over the same letters, with the Unicode ones that fold to them.
fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            'a', 'b', 'k', 's', 'K', 'S', 'A', 'B', '-', '=', '_', ' ', '1', '.', '\n', 'ſ',
            '\u{212A}', 'é',
        ]),
        0..12,
    )
    .prop_map(|v| v.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_generated_regex_is_never_skipped_where_it_matches(
        pattern in pattern(),
        texts in prop::collection::vec(text(), 8),
    ) {
        let Ok(regex) = build_regex(&pattern) else { return Ok(()) };
        let prefilter = Prefilter::new(&pattern);
        let mut texts = texts;
        // Texts that match, made from the pattern itself where proptest can.
        if let Ok(gen) = proptest::string::string_regex(&pattern) {
            let mut runner = proptest::test_runner::TestRunner::deterministic();
            for _ in 0..8 {
                if let Ok(tree) = gen.new_tree(&mut runner) {
                    let made = tree.current();
                    texts.push(format!("ab {made} ks"));
                    texts.push(made.to_ascii_uppercase());
                    texts.push(made);
                }
            }
        }
        for text in &texts {
            prop_assert!(
                prefilter.may_match(text) || !regex.is_match(text),
                "`{}` matches {:?} but the prefilter skipped it", pattern, text
            );
        }
    }
}

#[test]
fn the_written_cases_hold_pairwise() {
    // Each adversarial text against each pattern, one by one (clear failures).
    for pattern in ADVERSARIAL {
        for text in TEXTS {
            assert_sound(pattern, text);
        }
    }
}

/// Every `command:` of the shell corpora (tests/corpus), as written.
fn corpus_commands() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut out = Vec::new();
    for name in [
        "shell.yaml",
        "escape_hatches.yaml",
        "language.yaml",
        "language_default.yaml",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        for case in doc["cases"].as_sequence().unwrap() {
            if let Some(c) = case.get("command").and_then(|c| c.as_str()) {
                out.push(c.to_string());
            }
        }
    }
    out
}

#[test]
fn the_shell_corpus_is_never_skipped_where_a_rule_matches() {
    let commands = corpus_commands();
    assert!(commands.len() > 500, "{} commands", commands.len());
    let mut matched = 0;
    for pattern in TEAM.iter().chain(&ADVERSARIAL) {
        let regex = build_regex(pattern).unwrap();
        let prefilter = Prefilter::new(pattern);
        for command in commands.iter().flat_map(|c| variants(c)) {
            let is = regex.is_match(&command);
            matched += usize::from(is);
            assert!(
                prefilter.may_match(&command) || !is,
                "`{pattern}` matches {command:?} but the prefilter skipped it"
            );
        }
    }
    assert!(matched > 100, "{matched} matches");
}

//! Tests for the engine: overlaps, keyword prefiltering, custom rules and errors.

use super::*;

#[test]
fn borrowed_when_clean() {
    let r = defaults();
    let clean = "fn main() {\n    println!(\"hello, world\");\n}\n// task: ask for disk space\n";
    assert!(matches!(r.redact(clean), Cow::Borrowed(_)));
    assert!(matches!(r.redact(""), Cow::Borrowed(_)));
    let empty = Redactor::compile(false, &[]).unwrap();
    assert!(empty.is_empty());
    assert!(matches!(
        empty.redact("password=hunter2hunter2"),
        Cow::Borrowed(_)
    ));
}

#[test]
fn multiple_secrets_in_one_text() {
    let ghp = format!("ghp_{}", gen(ALNUM, 36, 1));
    let akia = format!("AKIA{}", gen(UPPER_B32, 16, 2));
    let text = format!("é token {ghp}\nkey {akia} ü\npassword=hunter2hunter2\n{ghp}");
    assert_eq!(
        defaults().redact(&text),
        "é token [REDACTED:github-pat]\nkey [REDACTED:aws-access-key-id] ü\n\
         password=[REDACTED:generic-secret]\n[REDACTED:github-pat]"
    );
    assert_eq!(
        defaults().matching_rules(&text),
        vec!["aws-access-key-id", "github-pat", "generic-secret"]
    );
}

#[test]
fn specific_rule_labels_a_secret_a_generic_rule_also_finds() {
    let ghs = format!("ghs_{}", gen(ALNUM, 36, 1));
    let text = format!("https://x-access-token:{ghs}@github.com/o/r.git");
    assert_eq!(
        defaults().redact(&text),
        "https://x-access-token:[REDACTED:github-app-token]@github.com/o/r.git"
    );
    assert_eq!(
        defaults().matching_rules(&text),
        vec!["github-app-token", "connection-string-password"]
    );
}

#[test]
fn overlapping_matches_merge_under_the_earliest_start() {
    let r = Redactor::compile(
        false,
        &[
            rule("tail", r"\d+xyz", &[], 0),
            rule("head", r"abc\d+", &[], 0),
        ],
    )
    .unwrap();
    // `head` starts first; the union is redacted so no digit of `tail` leaks.
    assert_eq!(r.redact("<abc123xyz>"), "<[REDACTED:head]>");
    assert_eq!(r.matching_rules("<abc123xyz>"), vec!["tail", "head"]);
    assert_eq!(r.redact("abc1 9xyz"), "[REDACTED:head] [REDACTED:tail]");
}

#[test]
fn overlapping_matches_same_start_longest_then_rule_order() {
    let r = Redactor::compile(
        false,
        &[
            rule("short", r"abc", &[], 0),
            rule("long", r"abcdef", &[], 0),
            rule("same", r"abcdef", &[], 0),
        ],
    )
    .unwrap();
    assert_eq!(r.redact("x abcdef y"), "x [REDACTED:long] y");
    assert_eq!(r.redact("x abc y"), "x [REDACTED:short] y");
}

#[test]
fn chained_overlaps_become_one_redaction() {
    let r = Redactor::compile(
        false,
        &[
            rule("c", r"bcc", &[], 0),
            rule("b", r"aabb", &[], 0),
            rule("a", r"1aa", &[], 0),
        ],
    )
    .unwrap();
    assert_eq!(r.redact("x1aabbcc2"), "x[REDACTED:a]2");
}

#[test]
fn a_match_counts_only_with_one_of_its_keywords() {
    let r = Redactor::compile(
        false,
        &[rule("gated", r"(?:(?i)zzz )?secret\d+", &["zzz"], 0)],
    )
    .unwrap();
    assert!(matches!(r.redact("secret123"), Cow::Borrowed(_)));
    assert!(r.matching_rules("secret123").is_empty());
    // A keyword elsewhere in the text does not make a match that lacks it count.
    assert!(matches!(r.redact("zzz\nsecret123"), Cow::Borrowed(_)));
    assert_eq!(r.redact("zzz secret123"), "[REDACTED:gated]");
    // Keywords ignore ASCII case, like most secret formats' context does.
    assert_eq!(r.redact("a ZzZ secret123"), "a [REDACTED:gated]");
}

#[test]
fn entropy_threshold_and_allowlists() {
    let mut spec = rule("hex", r"key=([0-9a-f]{16})", &["key="], 1);
    spec.entropy = Some(3.0);
    spec.allowlists = vec![AllowlistSpec {
        stopwords: vec!["dead".into()],
        ..AllowlistSpec::default()
    }];
    let global = AllowlistSpec {
        regexes: vec!["^0123".into()],
        ..AllowlistSpec::default()
    };
    let r = Redactor::compile_with(false, &[spec], &[global]).unwrap();
    assert_eq!(r.redact("key=9f86d081884c7d65"), "key=[REDACTED:hex]");
    // Low entropy: a repeated pattern is not a key.
    assert!(matches!(r.redact("key=abababababababab"), Cow::Borrowed(_)));
    // Stopword (per rule) and regex (global) allowlists.
    assert!(matches!(r.redact("key=9f86deadd081884c"), Cow::Borrowed(_)));
    assert!(matches!(r.redact("key=0123f86d081884c7"), Cow::Borrowed(_)));
}

#[test]
fn allowlist_on_the_whole_match_and_require_all() {
    let mut spec = rule("pw", r"(?:pass|test)=(\w{8})", &["pass=", "test="], 1);
    spec.allowlists = vec![AllowlistSpec {
        regexes: vec!["^test=".into()],
        target: AllowTarget::Match,
        ..AllowlistSpec::default()
    }];
    let r = Redactor::compile(false, &[spec.clone()]).unwrap();
    assert_eq!(r.redact("pass=abcdefgh"), "pass=[REDACTED:pw]");
    assert_eq!(r.redact("test=abcdefgh"), "test=abcdefgh");
    spec.allowlists = vec![AllowlistSpec {
        regexes: vec!["^abc".into()],
        stopwords: vec!["xyz".into()],
        require_all: true,
        ..AllowlistSpec::default()
    }];
    let r = Redactor::compile(false, &[spec]).unwrap();
    assert_eq!(r.redact("pass=abcdefgh"), "pass=[REDACTED:pw]");
    assert_eq!(r.redact("pass=abcxyzgh"), "pass=abcxyzgh");
}

#[test]
fn first_non_empty_group_is_the_secret() {
    let mut spec = rule("alt", r"(?:a=(\d{4})|b=([a-z]{4}))", &["a=", "b="], 0);
    spec.secret_group = SecretGroup::FirstNonEmpty;
    let r = Redactor::compile(false, &[spec]).unwrap();
    assert_eq!(
        r.redact("a=1234 b=wxyz"),
        "a=[REDACTED:alt] b=[REDACTED:alt]"
    );
}

#[test]
fn redact_json_reaches_every_string_and_key() {
    let ghp = format!("ghp_{}", gen(ALNUM, 36, 1));
    let mut v = serde_json::json!({
        "path": "a.txt",
        "nested": [1, true, null, {"token": ghp}],
        ghp.clone(): "key holds a token",
    });
    assert!(defaults().redact_json(&mut v));
    assert_eq!(
        v,
        serde_json::json!({
            "path": "a.txt",
            "nested": [1, true, null, {"token": "[REDACTED:github-pat]"}],
            "[REDACTED:github-pat]": "key holds a token",
        })
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["path", "nested", "[REDACTED:github-pat]"]);
    let mut clean = serde_json::json!({"a": ["b", 1]});
    assert!(!defaults().redact_json(&mut clean));
}

#[test]
fn shared_and_nested_keywords_run_every_rule_that_lists_them() {
    let r = Redactor::compile(
        false,
        &[
            rule("outer", r"tok-\d{4}", &["tok-"], 0),
            rule("inner", r"k-[a-z]{4}", &["k-"], 0),
            rule("also-outer", r"TOK-[A-Z]{2}\b", &["TOK-"], 0),
        ],
    )
    .unwrap();
    assert_eq!(
        r.redact("tok-1234 k-abcd TOK-AB"),
        "[REDACTED:outer] [REDACTED:inner] [REDACTED:also-outer]"
    );
    assert_eq!(r.matching_rules("xtok-abcd"), vec!["inner"]);
}

#[test]
fn empty_secret_group_is_not_redacted() {
    let r = Redactor::compile(false, &[rule("opt", r"key=(\d*)x", &[], 1)]).unwrap();
    assert!(matches!(r.redact("key=x"), Cow::Borrowed(_)));
    assert!(r.matching_rules("key=x").is_empty());
    assert_eq!(r.redact("key=12x"), "key=[REDACTED:opt]x");
}

#[test]
fn custom_rules_follow_the_built_in_set() {
    let custom = rule(
        "corp-host",
        r"[a-z0-9-]+\.corp\.example\.com",
        &["corp.example.com"],
        0,
    );
    let r = Redactor::compile(true, std::slice::from_ref(&custom)).unwrap();
    assert_eq!(r.len(), default_rules().len() + 1);
    assert_eq!(r.rule_ids().last(), Some("corp-host"));
    assert_eq!(
        r.redact("ssh build-01.corp.example.com"),
        "ssh [REDACTED:corp-host]"
    );
    let only = Redactor::compile(false, &[custom]).unwrap();
    assert_eq!(only.len(), 1);
    assert!(!only.is_empty());
    assert!(matches!(
        only.redact("password=hunter2hunter2"),
        Cow::Borrowed(_)
    ));
}

#[test]
fn error_bad_regex_is_one_line() {
    let errors = compile_errors(&[rule("bad", r"(abc", &[], 0)]);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].id, "bad");
    assert_eq!(
        errors[0].message,
        "invalid regex: unclosed group (at `(abc`)"
    );
}

#[test]
fn error_regex_too_large() {
    // Any character is up to four bytes: 8000 bytes is over the match limit.
    let errors = compile_errors(&[rule("huge", r".{2000}", &[], 0)]);
    assert_eq!(
        errors,
        vec![RedactRuleError {
            id: "huge".into(),
            message: "regex is too large; simplify it (a match can be 8000 bytes long, the limit is 4096)".into()
        }]
    );
}

#[test]
fn unbounded_repetitions_are_capped_without_cutting_secrets() {
    let r = Redactor::compile(false, &[rule("tok", r"tok_[a-z]+", &["tok_"], 0)]).unwrap();
    assert_eq!(r.redact("a tok_abc b"), "a [REDACTED:tok] b");
    // Past the cap the repetition keeps matching: no tail of the token stays.
    for n in [255, 256, 257, 300, 5000, 100_000] {
        let long = format!("x tok_{} y", "a".repeat(n));
        assert_eq!(r.redact(&long), "x [REDACTED:tok] y", "{n} letters");
    }
}

#[test]
fn perl_classes_are_ascii() {
    let r = Redactor::compile(false, &[rule("w", r"id=\w{4}\b", &["id="], 0)]).unwrap();
    assert_eq!(r.redact("id=abcd"), "[REDACTED:w]");
    // `é` is not a word character here (as in Go), so `\b` holds before it.
    assert_eq!(r.redact("id=abcdé"), "[REDACTED:w]é");
    assert!(matches!(r.redact("id=abcé"), Cow::Borrowed(_)));
}

#[test]
fn error_empty_regex() {
    let errors = compile_errors(&[rule("empty", "", &[], 0)]);
    assert_eq!(errors[0].message, "regex is empty");
}

#[test]
fn error_regex_matching_the_empty_string() {
    for regex in [
        r"a*",
        r"x?",
        r"\b",
        r"(?m)^",
        r"foo|",
        r"\B",
        r"(?m)$",
        r"\b{start}",
        r"(?:a|b)*c?",
    ] {
        let errors = compile_errors(&[rule("everywhere", regex, &[], 0)]);
        assert_eq!(
            errors[0].message, "regex matches the empty string (it would redact everywhere)",
            "{regex}"
        );
    }
    // Zero-width assertions next to a real match are fine.
    assert!(Redactor::compile(false, &[rule("ok", r"\bfoo\b", &[], 0)]).is_ok());
    assert!(Redactor::compile(false, &[rule("ok", r"(?m)^x$", &[], 0)]).is_ok());
}

#[test]
fn error_secret_group_out_of_range() {
    let errors = compile_errors(&[
        rule("one", r"key=(\w+)", &[], 2),
        rule("none", r"key=\w+", &[], 1),
    ]);
    assert_eq!(
        errors[0].message,
        "secret_group 2 does not exist: the regex has 1 capture group"
    );
    assert_eq!(
        errors[1].message,
        "secret_group 1 does not exist: the regex has 0 capture groups"
    );
    assert!(Redactor::compile(false, &[rule("ok", r"key=(\w+)", &[], 1)]).is_ok());
}

#[test]
fn error_duplicate_ids() {
    let errors = compile_errors(&[rule("dup", r"aaa", &[], 0), rule("dup", r"bbb", &[], 0)]);
    assert_eq!(
        errors,
        vec![RedactRuleError {
            id: "dup".into(),
            message: "duplicate rule id: an earlier rule already uses it".into()
        }]
    );
    let Err(errors) = Redactor::compile(true, &[rule("jwt", r"mine", &[], 0)]) else {
        panic!("a custom rule reusing a built-in id compiled");
    };
    assert_eq!(
        errors[0].message,
        "duplicate rule id: a built-in rule already uses it; choose another id"
    );
    // Without the built-in set the id is free.
    assert!(Redactor::compile(false, &[rule("jwt", r"mine", &[], 0)]).is_ok());
}

#[test]
fn error_empty_id_and_keyword() {
    let errors = compile_errors(&[rule("", r"aaa", &[], 0), rule("k", r"bbb", &["b", ""], 0)]);
    assert_eq!(errors[0].message, "rule id is empty");
    assert_eq!(errors[1].id, "k");
    assert_eq!(errors[1].message, "keywords must not be empty strings");
}

#[test]
fn every_bad_rule_is_reported() {
    let errors = compile_errors(&[
        rule("bad-syntax", r"[z-a]", &[], 0),
        rule("good", r"fine\d+", &[], 0),
        rule("empty-match", r"\d*", &[], 0),
        rule("group", r"x(y)", &[], 3),
        rule("good", r"again", &[], 0),
        rule("empty", "", &[], 0),
    ]);
    let ids: Vec<&str> = errors.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["bad-syntax", "empty-match", "group", "good", "empty"]);
    assert!(
        errors[0].message.starts_with("invalid regex: "),
        "{}",
        errors[0].message
    );
    assert!(!errors[0].message.contains('\n'));
}

#[test]
fn redactor_is_send_sync_and_debug_shows_ids_only() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Redactor>();
    let r = Redactor::compile(
        false,
        &[rule("corp-host", r"secret-pattern-\d+", &["kw"], 0)],
    )
    .unwrap();
    let debug = format!("{r:?}");
    assert_eq!(debug, "Redactor { rules: [\"corp-host\"] }");
}

#[test]
fn no_rescan_of_replacement_text() {
    // The marker itself must not be redacted again, even by a rule that matches it.
    let r = Redactor::compile(false, &[rule("red", r"REDACTED|secret", &[], 0)]).unwrap();
    assert_eq!(r.redact("a secret b"), "a [REDACTED:red] b");
}

/// The rule regexes are translated from the rewritten syntax tree, not
/// printed and parsed again: the same HIR either way.
#[test]
fn ascii_classes_translate_like_their_printed_form() {
    let mut patterns: Vec<String> = default_rules()
        .into_iter()
        .flat_map(|r| {
            let mut p = vec![r.regex];
            if let Some(c) = r.continuation {
                p.extend([c.piece, c.footer]);
            }
            p
        })
        .collect();
    patterns.extend(
        [
            r"\bid=\w{4}\b",
            r"(?i)[\d\s\W]+\B",
            r"[^\w\D]{2}",
            r"a\b{start}b",
        ]
        .map(String::from),
    );
    for p in patterns {
        let printed = syntax::ascii_perl_classes(&p).unwrap();
        let reparsed = regex_syntax::parse(&printed).unwrap();
        let ast = syntax::ascii_ast(&p).unwrap();
        let direct = regex_syntax::hir::translate::Translator::new()
            .translate(&p, &ast)
            .unwrap();
        assert_eq!(direct, reparsed, "{p}");
    }
}

//! Importing gitleaks configs: what runs, what is reported, and where.

use super::*;
use crate::config::Position;
use crate::policy::redact::gitleaks::{parse, GitleaksImport, GitleaksIssue, DEFAULT_CONFIG};

const CONFIG: &str = include_str!("../../../../tests/fixtures/redact/gitleaks.toml");

fn import() -> GitleaksImport {
    parse(CONFIG).expect("the fixture loads")
}

fn imported() -> Redactor {
    Redactor::compile(false, &import().rules).expect("imported rules compile")
}

fn line_of(needle: &str) -> usize {
    CONFIG
        .lines()
        .position(|l| l.contains(needle))
        .expect("needle in fixture")
        + 1
}

#[test]
fn supported_rules_are_imported_in_order() {
    let ids: Vec<String> = import().rules.into_iter().map(|r| r.id).collect();
    assert_eq!(ids, ["acme-api-key", "acme-password", "twilio-sid"]);
    let rules = import().rules;
    assert_eq!(rules[1].entropy, Some(3.0));
    assert_eq!(rules[0].secret_group, SecretGroup::FirstNonEmpty);
    assert_eq!(rules[2].secret_group, SecretGroup::FirstNonEmpty);
    assert_eq!(rules[2].keywords, ["sk"]);
}

#[test]
fn unsupported_regexes_are_reported_by_rule_with_the_reason() {
    let warnings = import().warnings;
    let unsupported: Vec<&GitleaksIssue> = warnings.iter().filter(|w| w.unsupported).collect();
    let ids: Vec<&str> = unsupported
        .iter()
        .filter_map(|w| w.rule.as_deref())
        .collect();
    assert_eq!(
        ids,
        ["lookahead-token", "backreference-quoted", "possessive-key"]
    );
    assert!(
        unsupported[0].message.contains("look-around"),
        "{:?}",
        unsupported[0]
    );
    assert!(
        unsupported[1].message.contains("backreferences"),
        "{:?}",
        unsupported[1]
    );
    assert!(
        unsupported[2].message.contains("possessive"),
        "{:?}",
        unsupported[2]
    );
    // Each points at its rule's regex.
    assert_eq!(unsupported[0].pos.line, line_of("tok_(?="));
    assert_eq!(unsupported[1].pos.line, line_of("qsecret_[a-z]{10}"));
    assert_eq!(unsupported[2].pos.line, line_of("pkey_[a-z]++"));
    // The path-only rule is reported as not applying, not as unsupported.
    let path_only = warnings
        .iter()
        .find(|w| w.rule.as_deref() == Some("pkcs12-file"))
        .expect("pkcs12 warning");
    assert!(!path_only.unsupported);
    assert!(path_only.message.contains("file paths"), "{path_only:?}");
}

#[test]
fn imported_rules_redact_with_go_semantics_and_allowlists() {
    let r = imported();
    let key = format!(
        "acme_{}",
        gen("abcdefghijklmnopqrstuvwxyz0123456789", 32, 3)
    );
    assert_eq!(
        r.redact(&format!("k = {key}\n")),
        "k = [REDACTED:acme-api-key]\n"
    );
    // The global allowlist (regex and stopword) lets documentation through.
    assert!(matches!(
        r.redact(&format!("k = acme_example{}\n", &key[13..])),
        Cow::Borrowed(_)
    ));
    assert_eq!(
        r.redact("ACME_PASSWORD = \"x7#kQ2!pL9@vR4\"\n"),
        "ACME_PASSWORD = \"[REDACTED:acme-password]\"\n"
    );
    // Entropy: a repetitive value is not a secret.
    assert!(matches!(
        r.redact("ACME_PASSWORD = \"aaaaaaaaaaaaaa\"\n"),
        Cow::Borrowed(_)
    ));
    // The rule's own allowlist, on the whole match.
    assert!(matches!(
        r.redact("acme_test_password = \"x7#kQ2!pL9@vR4\"\n"),
        Cow::Borrowed(_)
    ));
    assert!(matches!(
        r.redact("dummy acme password: x7#kdummypL9@vR4\n"),
        Cow::Borrowed(_)
    ));
    let sid = format!("SK{}", gen(HEX, 32, 5));
    assert_eq!(
        r.redact(&format!("sid {sid} end")),
        "sid [REDACTED:twilio-sid] end"
    );
    assert!(matches!(
        r.redact(&format!("sid SK00000000{} end", &gen(HEX, 24, 1))),
        Cow::Borrowed(_)
    ));
}

#[test]
fn broken_configs_are_errors_with_positions() {
    let err = parse("[[rules]]\nid = \"x\"\nregx = 'abc'\n").unwrap_err();
    assert_eq!((err[0].pos.line, err[0].pos.col), (3, 1), "{err:?}");
    assert!(err[0].message.contains("unknown field `regx`"), "{err:?}");

    let err = parse("[[rules]]\nid = \"x\"\nkeywords = [\"a\"]\n").unwrap_err();
    assert_eq!(err[0].message, "rule `x` has no `regex`");
    assert_eq!(err[0].pos.line, 1);

    let err = parse("[[rules]]\nid = \"a\"\nregex = 'a1'\n[[rules]]\nid = \"a\"\nregex = 'a2'\n")
        .unwrap_err();
    assert_eq!(err[0].message, "duplicate rule id `a`");
    assert_eq!((err[0].pos.line, err[0].pos.col), (5, 6));

    let err = parse("[[rules]]\nid = \"a\"\nregex = 'a1'\nsecretGroup = -1\n").unwrap_err();
    assert_eq!(err[0].pos.line, 4);

    let err = parse("rules = [\n").unwrap_err();
    assert!(
        err[0].message.starts_with("invalid gitleaks config:"),
        "{err:?}"
    );

    let err = parse(
        "[[allowlists]]\ntargetRules = [\"nope\"]\nregexes = ['x']\n[[rules]]\nid = \"a\"\nregex = 'a1'\n",
    )
    .unwrap_err();
    assert!(err[0].message.contains("`nope`"), "{err:?}");
    assert_eq!(err[0].pos.line, 2);

    let err = parse("[[rules]]\nid = \"a\"\nregex = 'a1'\n[[rules.allowlists]]\ncondition = \"XOR\"\nregexes = ['x']\n").unwrap_err();
    assert!(err[0].message.contains("`XOR`"), "{err:?}");
}

#[test]
fn targeted_allowlists_and_and_conditions() {
    let text = "[[allowlists]]\ntargetRules = [\"b\"]\nstopwords = [\"fake\"]\n\
        [[rules]]\nid = \"a\"\nregex = '''tka_\\w{8}'''\nkeywords = [\"tka_\"]\n\
        [[rules]]\nid = \"b\"\nregex = '''tkb_\\w{8}'''\nkeywords = [\"tkb_\"]\n\
        [[rules.allowlists]]\ncondition = \"AND\"\npaths = ['''x''']\nregexes = ['''1''']\n";
    let import = parse(text).unwrap();
    let r = Redactor::compile(false, &import.rules).unwrap();
    assert_eq!(r.redact("tka_fake1234"), "[REDACTED:a]");
    assert_eq!(r.redact("tkb_fake1234"), "tkb_fake1234");
    // `AND` with a path check can never hold for text: that allowlist is dropped.
    assert_eq!(r.redact("tkb_abcd1234"), "[REDACTED:b]");
    assert!(import
        .warnings
        .iter()
        .any(|w| w.message.contains("`paths`")));
}

#[test]
fn line_allowlists_test_the_line_of_the_match() {
    let text = "[[rules]]\nid = \"a\"\nregex = 'tka_[a-z]{4}'\nkeywords = [\"tka_\"]\n[[rules.allowlists]]\nregexTarget = \"line\"\nregexes = ['^# example']\n";
    let import = parse(text).unwrap();
    assert!(import.warnings.is_empty(), "{:?}", import.warnings);
    assert_eq!(import.rules[0].allowlists[0].target, AllowTarget::Line);
    let r = Redactor::compile(false, &import.rules).unwrap();
    assert_eq!(r.redact("x tka_abcd\n"), "x [REDACTED:a]\n");
    assert_eq!(r.redact("# example: tka_abcd\n"), "# example: tka_abcd\n");
    // The next line is another line.
    assert_eq!(
        r.redact("tka_abcd\n# example\n"),
        "[REDACTED:a]\n# example\n"
    );
    // Bounded: a line start further than LINE_CONTEXT before the match is not seen.
    let far = format!("# example{} tka_abcd", " ".repeat(LINE_CONTEXT));
    assert_eq!(r.redact(&far), far.replace("tka_abcd", "[REDACTED:a]"));
    // Streamed in any chunks, the same.
    let text = format!(
        "{}\n# example {} tka_abcd tail\nz tka_wxyz\n",
        "a".repeat(700),
        "b".repeat(300)
    );
    let whole = r.redact(&text).into_owned();
    assert_eq!(whole.matches("[REDACTED:a]").count(), 1, "{whole}");
    for chunk in [1, 3, 50, 511, 4096] {
        let mut s = r.stream();
        let mut out = String::new();
        for piece in text.as_bytes().chunks(chunk) {
            out.push_str(&s.push(std::str::from_utf8(piece).unwrap()));
        }
        out.push_str(&s.finish());
        assert_eq!(out, whole, "chunks of {chunk}");
    }
}

#[test]
fn extend_use_default_imports_gitleaks_default_config() {
    let text = "[extend]\nuseDefault = true\ndisabledRules = [\"jwt\", \"no-such-rule\"]\n\n[[rules]]\nid = \"a\"\nregex = 'tka_[a-z]{4}'\nkeywords = [\"tka_\"]\n\n[[rules]]\nid = \"github-pat\"\n[[rules.allowlists]]\nregexes = ['^ghp_0']\n";
    let import = parse(text).unwrap();
    let stock = parse(DEFAULT_CONFIG).unwrap();
    let ids: Vec<&str> = import.rules.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), stock.rules.len() - 1 + 1, "{ids:?}");
    assert!(!ids.contains(&"jwt"));
    assert_eq!(ids.last(), Some(&"a"));
    // The default rules are placed at `[extend]`; the merged one at its own rule.
    assert_eq!(import.positions[0], Position { line: 1, col: 1 });
    let pat = ids.iter().position(|&i| i == "github-pat").unwrap();
    assert_eq!(import.positions[pat].line, 10);
    let default_pat = stock.rules.iter().find(|r| r.id == "github-pat").unwrap();
    assert_eq!(import.rules[pat].regex, default_pat.regex);
    assert_eq!(
        import.rules[pat].allowlists.len(),
        default_pat.allowlists.len() + 1
    );
    // The default config's global allowlist applies to this file's rule too.
    assert_eq!(
        import.rules.last().unwrap().allowlists.len(),
        stock.allowlists.len()
    );
    let messages: Vec<&str> = import.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(
        messages.iter().any(|m| m.contains("`no-such-rule`")),
        "{messages:?}"
    );
    let r = Redactor::compile(false, &import.rules).unwrap();
    assert_eq!(r.redact("x tka_abcd"), "x [REDACTED:a]");
    let pat = format!("ghp_1{}", gen(ALNUM, 35, 3));
    assert_eq!(r.redact(&pat), "[REDACTED:github-pat]");
    let allowed = format!("ghp_0{}", gen(ALNUM, 35, 3));
    assert_eq!(r.redact(&allowed), allowed);
}

#[test]
fn extend_keys_are_checked() {
    let err = parse("[extend]\nuseDefaults = true\n").unwrap_err();
    assert!(
        err[0].message.contains("unknown key `useDefaults`"),
        "{err:?}"
    );
    let err = parse("[extend]\nuseDefault = \"yes\"\n").unwrap_err();
    assert!(err[0].message.contains("wrong type"), "{err:?}");
    let ok = parse("[extend]\npath = \"base.toml\"\n").unwrap();
    assert!(
        ok.warnings[0].message.contains("is not followed"),
        "{:?}",
        ok.warnings
    );
}

#[test]
fn perl_classes_mean_what_they_mean_in_go() {
    // `\w` and `\d` are ASCII in Go: `é` does not extend a token.
    let import =
        parse("[[rules]]\nid = \"w\"\nregex = '''tkw_\\w{4}\\b'''\nkeywords = [\"tkw_\"]\n")
            .unwrap();
    let r = Redactor::compile(false, &import.rules).unwrap();
    assert_eq!(r.redact("tkw_abcd"), "[REDACTED:w]");
    assert_eq!(r.redact("tkw_abcdé"), "[REDACTED:w]é");
    assert_eq!(r.redact("tkw_abcé"), "tkw_abcé");
}

#[test]
fn unicode_classes_import_and_match() {
    // `\p{L}` is a letter in both dialects; its braces are not literal text.
    let import =
        parse("[[rules]]\nid = \"u\"\nregex = '''tku_\\p{L}{4}'''\nkeywords = [\"tku_\"]\n")
            .unwrap();
    assert!(import.warnings.is_empty());
    let r = Redactor::compile(false, &import.rules).unwrap();
    assert_eq!(r.redact("tku_éabc"), "[REDACTED:u]");
    assert_eq!(r.redact("tku_1abc"), "tku_1abc");
}

#[test]
fn go_literal_braces_are_escaped() {
    use crate::policy::redact::gitleaks::go_literal_braces;
    assert_eq!(go_literal_braces(r"a{2}b{1,}c{3,4}"), r"a{2}b{1,}c{3,4}");
    assert_eq!(go_literal_braces(r"\$\{\d+\}"), r"\$\{\d+\}");
    assert_eq!(go_literal_braces(r"{{x}}-{\d+}$"), r"\{\{x}}-\{\d+}$");
    assert_eq!(go_literal_braces(r"[{}]{2}[]{]x{"), r"[{}]{2}[]{]x\{");
    assert_eq!(go_literal_braces(r"[[:alpha:]{]{a"), r"[[:alpha:]{]\{a");
    // Braces that belong to an escape stay as they are.
    assert_eq!(go_literal_braces(r"\p{L}+{x}"), r"\p{L}+\{x}");
    assert_eq!(
        go_literal_braces(r"[\P{Greek}]{2}\x{263a}"),
        r"[\P{Greek}]{2}\x{263a}"
    );
    assert_eq!(go_literal_braces(r"a\"), r"a\");
}

//! Secret redaction: replaces secrets in tool output with `[REDACTED:rule-id]`.
//!
//! Every rule is a regex with optional literal keywords. One Aho-Corasick pass
//! over the text finds which keywords occur, and only the rules whose keyword
//! occurs (plus those without keywords) run their regex, so the cost for
//! clean text stays close to one scan no matter how many rules a policy has.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;

use aho_corasick::AhoCorasick;
use regex::{Regex, RegexBuilder};

/// Policy regexes are written by people and loaded at runtime; this caps the
/// memory one rule can take, both compiled and in the lazy DFA's cache.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Regex-crate syntax errors can run to several lines; a policy diagnostic
/// should stay on one.
const MAX_ERROR_MESSAGE_LEN: usize = 200;

/// One redaction rule as a policy declares it (also used for the built-in set).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedactRuleSpec {
    /// Identifier shown in the replacement text `[REDACTED:id]`; unique within a set.
    pub id: String,
    /// The pattern to redact, in the syntax of the `regex` crate.
    pub regex: String,
    /// Lower-cased literal strings, at least one of which occurs in any match; used as a prefilter. Empty: the regex always runs.
    pub keywords: Vec<String>,
    /// Capture group holding the secret; 0 = the whole match. Only that group is replaced, so context like `password=` stays.
    pub secret_group: usize,
}

/// Why a rule could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedactRuleError {
    /// Id of the offending rule, as written in the policy.
    pub id: String,
    /// What is wrong, phrased for the person who wrote the rule.
    pub message: String,
}

struct CompiledRule {
    id: String,
    regex: Regex,
    secret_group: usize,
    /// Without keywords the prefilter cannot rule it out, so it always runs.
    always_runs: bool,
}

/// A compiled, immutable set of redaction rules.
pub struct Redactor {
    rules: Vec<CompiledRule>,
    /// `None` when no rule has keywords, so clean text skips the scan entirely.
    keywords: Option<AhoCorasick>,
    /// For each automaton pattern, the rules that list it (keywords are shared).
    keyword_rules: Vec<Vec<usize>>,
    /// Number of rules with keywords, to stop the keyword scan once all are seen.
    keyword_rule_count: usize,
}

impl fmt::Debug for Redactor {
    // Ids only: the regexes and automaton are large and say little in a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.rule_ids().collect::<Vec<_>>())
            .finish()
    }
}

/// A secret's byte range in the text and the rule that found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    rule: usize,
}

impl Redactor {
    /// Compiles `rules`, preceded by the built-in set when `defaults`.
    ///
    /// Every bad rule is reported, not only the first, so one run of `check`
    /// shows everything to fix: a bad or empty regex, a regex over the size
    /// limit or one that matches the empty string, a `secret_group` the regex
    /// does not have, an empty id or keyword, and duplicate ids.
    pub fn compile(
        defaults: bool,
        rules: &[RedactRuleSpec],
    ) -> Result<Redactor, Vec<RedactRuleError>> {
        let builtin = if defaults {
            default_rules()
        } else {
            Vec::new()
        };
        let builtin_count = builtin.len();
        let mut errors = Vec::new();
        let mut compiled = Vec::new();
        let mut first_index: HashMap<&str, usize> = HashMap::new();
        let mut keyword_index: HashMap<String, usize> = HashMap::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();

        for (index, spec) in builtin.iter().chain(rules).enumerate() {
            let mut fail = |message: String| {
                errors.push(RedactRuleError {
                    id: spec.id.clone(),
                    message,
                })
            };
            let mut ok = true;
            if spec.id.is_empty() {
                fail("rule id is empty".to_string());
                ok = false;
            } else if let Some(&earlier) = first_index.get(spec.id.as_str()) {
                fail(if earlier < builtin_count {
                    "duplicate rule id: a built-in rule already uses it; choose another id"
                        .to_string()
                } else {
                    "duplicate rule id: an earlier rule already uses it".to_string()
                });
                ok = false;
            } else {
                first_index.insert(&spec.id, index);
            }
            if spec.keywords.iter().any(|k| k.is_empty()) {
                fail("keywords must not be empty strings".to_string());
                ok = false;
            }
            let regex = match compile_regex(spec) {
                Ok(regex) => Some(regex),
                Err(message) => {
                    fail(message);
                    None
                }
            };
            let (Some(regex), true) = (regex, ok) else {
                continue;
            };
            let rule = compiled.len();
            for keyword in &spec.keywords {
                // The automaton ignores ASCII case, so keywords differing only
                // in case are one pattern.
                let key = keyword.to_ascii_lowercase();
                let next = keyword_rules.len();
                let pattern = *keyword_index.entry(key).or_insert(next);
                if pattern == next {
                    keyword_rules.push(Vec::new());
                }
                if !keyword_rules[pattern].contains(&rule) {
                    keyword_rules[pattern].push(rule);
                }
            }
            compiled.push(CompiledRule {
                id: spec.id.clone(),
                regex,
                secret_group: spec.secret_group,
                always_runs: spec.keywords.is_empty(),
            });
        }

        let keywords = if keyword_rules.is_empty() {
            None
        } else {
            let mut patterns = vec![String::new(); keyword_rules.len()];
            for (keyword, pattern) in keyword_index {
                patterns[pattern] = keyword;
            }
            match AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(&patterns)
            {
                Ok(automaton) => Some(automaton),
                Err(e) => {
                    errors.push(RedactRuleError {
                        id: String::new(),
                        message: format!("the keywords of all rules together are too many: {e}"),
                    });
                    None
                }
            }
        };

        if !errors.is_empty() {
            return Err(errors);
        }
        let keyword_rule_count = compiled.iter().filter(|r| !r.always_runs).count();
        Ok(Redactor {
            rules: compiled,
            keywords,
            keyword_rules,
            keyword_rule_count,
        })
    }

    /// Replaces every secret with `[REDACTED:rule-id]`. Borrowed when nothing matched (the common case must not allocate).
    ///
    /// Overlapping secrets found by different rules become one redaction
    /// covering both, labelled with the rule whose match starts first (then
    /// the longer one, then the earlier rule), so no part of either secret
    /// survives and the output is never garbled.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut spans = Vec::new();
        for rule in self.candidate_rules(text) {
            self.collect_spans(rule, text, &mut spans);
        }
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        spans.sort_by(|a, b| {
            a.start
                .cmp(&b.start)
                .then(b.end.cmp(&a.end))
                .then(a.rule.cmp(&b.rule))
        });

        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        let mut spans = spans.into_iter().peekable();
        while let Some(winner) = spans.next() {
            let mut end = winner.end;
            while let Some(next) = spans.next_if(|s| s.start < end) {
                end = end.max(next.end);
            }
            out.push_str(&text[copied..winner.start]);
            out.push_str("[REDACTED:");
            out.push_str(&self.rules[winner.rule].id);
            out.push(']');
            copied = end;
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }

    /// Ids of the rules that match somewhere in `text`, for tests, `check` and decision logs.
    ///
    /// A rule counts when it would redact something on its own, so the list
    /// agrees with [`Redactor::redact`] even where overlapping secrets were
    /// merged under another rule's id.
    pub fn matching_rules(&self, text: &str) -> Vec<&str> {
        let mut spans = Vec::new();
        let mut ids = Vec::new();
        for rule in self.candidate_rules(text) {
            spans.clear();
            self.collect_spans(rule, text, &mut spans);
            if !spans.is_empty() {
                ids.push(self.rules[rule].id.as_str());
            }
        }
        ids
    }

    /// Number of compiled rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the set has no rules, in which case redaction never changes text.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Ids in order.
    pub fn rule_ids(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|r| r.id.as_str())
    }

    /// Which rules may match `text`: keyword-less ones always, the others only
    /// when one of their keywords occurs.
    fn candidate_rules<'s>(&'s self, text: &str) -> impl Iterator<Item = usize> + 's {
        let hits = self.keyword_hits(text);
        (0..self.rules.len()).filter(move |&rule| {
            self.rules[rule].always_runs || hits.as_ref().is_some_and(|h| h[rule])
        })
    }

    /// Per rule, whether one of its keywords occurs; `None` when none does, so
    /// text without any keyword costs no allocation.
    fn keyword_hits(&self, text: &str) -> Option<Vec<bool>> {
        let automaton = self.keywords.as_ref()?;
        let mut hits: Option<Vec<bool>> = None;
        let mut seen = 0;
        // Overlapping search, because one keyword can hide inside another
        // (`sk` in `sk_live_`) and both rules must run.
        for found in automaton.find_overlapping_iter(text) {
            let hits = hits.get_or_insert_with(|| vec![false; self.rules.len()]);
            for &rule in &self.keyword_rules[found.pattern().as_usize()] {
                if !hits[rule] {
                    hits[rule] = true;
                    seen += 1;
                }
            }
            if seen == self.keyword_rule_count {
                break;
            }
        }
        hits
    }

    fn collect_spans(&self, rule: usize, text: &str, spans: &mut Vec<Span>) {
        let compiled = &self.rules[rule];
        // Empty spans are skipped: replacing nothing with a marker would only
        // garble the text (compile rejects regexes that match the empty string,
        // but an optional secret group can still capture nothing).
        let mut push = |start: usize, end: usize| {
            if start < end {
                spans.push(Span { start, end, rule });
            }
        };
        if compiled.secret_group == 0 {
            for m in compiled.regex.find_iter(text) {
                push(m.start(), m.end());
            }
        } else {
            for caps in compiled.regex.captures_iter(text) {
                if let Some(m) = caps.get(compiled.secret_group) {
                    push(m.start(), m.end());
                }
            }
        }
    }
}

fn compile_regex(spec: &RedactRuleSpec) -> Result<Regex, String> {
    if spec.regex.is_empty() {
        return Err("regex is empty".to_string());
    }
    let regex = RegexBuilder::new(&spec.regex)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => "regex is too large; simplify it".to_string(),
            regex::Error::Syntax(detail) => format!("invalid regex: {}", syntax_summary(&detail)),
            other => format!("invalid regex: {}", syntax_summary(&other.to_string())),
        })?;
    if matches_empty(&regex) {
        return Err("regex matches the empty string (it would redact everywhere)".to_string());
    }
    let groups = regex.captures_len() - 1;
    if spec.secret_group > groups {
        return Err(format!(
            "secret_group {} does not exist: the regex has {} capture group{}",
            spec.secret_group,
            groups,
            if groups == 1 { "" } else { "s" }
        ));
    }
    Ok(regex)
}

/// The regex crate prints the pattern with a caret under the error and the
/// reason on a line starting `error:`; a one-line diagnostic needs the reason.
fn syntax_summary(detail: &str) -> String {
    let reason = detail
        .lines()
        .find_map(|line| line.trim().strip_prefix("error:"))
        .or_else(|| detail.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("unknown error")
        .trim();
    if reason.len() <= MAX_ERROR_MESSAGE_LEN {
        return reason.to_string();
    }
    let mut cut = MAX_ERROR_MESSAGE_LEN;
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &reason[..cut])
}

/// Whether the regex can produce an empty match. The regex crate does not
/// expose the minimum match length, but a zero-width match depends only on
/// which assertions hold at a position (`^`, `$`, `\b`, `\B`, multi-line and
/// CRLF anchors), and these probes put every kind of neighbour (nothing, ASCII
/// and non-ASCII word characters, spaces, `\n`, `\r\n`) on both sides.
fn matches_empty(regex: &Regex) -> bool {
    const PROBES: &[&str] = &[
        "", "a", " ", "\n", "\r\n", "a a", " a ", "a\nb", "a\r\nb", "é", "é é", "aé", "a-a", "0_",
    ];
    PROBES
        .iter()
        .any(|probe| regex.find_iter(probe).any(|m| m.is_empty()))
}

fn spec(id: &str, regex: &str, keywords: &[&str], secret_group: usize) -> RedactRuleSpec {
    RedactRuleSpec {
        id: id.to_string(),
        regex: regex.to_string(),
        keywords: keywords.iter().map(|k| k.to_string()).collect(),
        secret_group,
    }
}

/// The built-in rules that `defaults: true` turns on.
///
/// Specific formats come first so that, where a generic rule (an assignment,
/// a URL password) finds the same secret, the specific id labels it.
pub fn default_rules() -> Vec<RedactRuleSpec> {
    vec![
        spec(
            "aws-access-key-id",
            r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
            &["akia", "asia", "abia", "acca"],
            0,
        ),
        // A bare 40-character base64 string is far too common to redact on its
        // own; the secret key is only recognisable by the name it is assigned to.
        spec(
            "aws-secret-access-key",
            r#"(?i)(?:secret_access_key|secretaccesskey)["']?\s*(?::=|=>|=|:)\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
            &["secret_access_key", "secretaccesskey"],
            1,
        ),
        spec("github-pat", r"\bghp_[A-Za-z0-9]{36}\b", &["ghp_"], 0),
        spec("github-oauth", r"\bgho_[A-Za-z0-9]{36}\b", &["gho_"], 0),
        spec(
            "github-app-token",
            r"\b(?:ghu|ghs)_[A-Za-z0-9]{36}\b",
            &["ghu_", "ghs_"],
            0,
        ),
        spec(
            "github-refresh-token",
            r"\bghr_[A-Za-z0-9]{36}\b",
            &["ghr_"],
            0,
        ),
        spec(
            "github-fine-grained-pat",
            r"\bgithub_pat_[A-Za-z0-9_]{82}\b",
            &["github_pat_"],
            0,
        ),
        // Legacy tokens are 20 characters; newer routable ones are longer and
        // carry dot-separated suffixes, which belong to the secret too.
        spec(
            "gitlab-pat",
            r"\bglpat-[A-Za-z0-9_-]{20,300}(?:\.[A-Za-z0-9_-]+)*",
            &["glpat-"],
            0,
        ),
        spec(
            "slack-bot-token",
            r"\bxoxb-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9-]{20,}",
            &["xoxb-"],
            0,
        ),
        spec(
            "slack-user-token",
            r"\bxox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9]{28,34}\b",
            &["xoxp-", "xoxe-"],
            0,
        ),
        spec(
            "slack-legacy-token",
            r"\bxox[ar]-(?:[0-9]-)?[A-Za-z0-9]{8,48}\b",
            &["xoxa-", "xoxr-"],
            0,
        ),
        spec(
            "slack-webhook-url",
            r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,120}",
            &["hooks.slack.com"],
            0,
        ),
        spec(
            "stripe-secret-key",
            r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}\b",
            &["sk_live_", "rk_live_", "sk_test_", "rk_test_"],
            0,
        ),
        // `T3BlbkFJ` is base64 for "OpenAI"; older keys carry it at a fixed place.
        spec(
            "openai-api-key",
            r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,250}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\b)",
            &["sk-proj-", "sk-svcacct-", "sk-admin-", "t3blbkfj"],
            0,
        ),
        // The key can end in `-`, where `\b` fails; the trailing class plays its role.
        spec(
            "anthropic-api-key",
            r"\b(sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{80,120})(?:[^A-Za-z0-9_-]|$)",
            &["sk-ant-"],
            1,
        ),
        spec(
            "google-api-key",
            r"\b(AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)",
            &["aiza"],
            1,
        ),
        spec("npm-access-token", r"\bnpm_[A-Za-z0-9]{36}\b", &["npm_"], 0),
        // The fixed part is base64 of the macaroon header naming pypi.org
        // (or test.pypi.org).
        spec(
            "pypi-upload-token",
            r"\bpypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,1000}",
            &["pypi-ageichlwas5vcmc", "pypi-agendgvzdc5wexbplm9yzw"],
            0,
        ),
        // The second alternative covers a block cut short (a `read` with a line
        // limit): the headers and base64 lines that are left still go.
        spec(
            "private-key",
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|(?:\r?\n[ \t]*[A-Za-z-]+:[^\r\n]*)*(?:[A-Za-z0-9+/=\\]|\r?\n[ \t]*)*)",
            &["private key"],
            0,
        ),
        // Header and payload are base64 of a JSON object, so both start `eyJ`.
        spec(
            "jwt",
            r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}={0,2}",
            &["eyj"],
            0,
        ),
        spec("twilio-api-key", r"\bSK[0-9a-fA-F]{32}\b", &["sk"], 0),
        spec(
            "sendgrid-api-key",
            r"\b(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
            &["sg."],
            1,
        ),
        spec(
            "huggingface-access-token",
            r"\bhf_[A-Za-z]{34}\b",
            &["hf_"],
            0,
        ),
        // No fixed literal: the first part is the base64 of a numeric user id,
        // which starts with M, N or O. The exact part lengths keep it precise.
        spec(
            "discord-bot-token",
            r"\b([MNO][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?:[^A-Za-z0-9_-]|$)",
            &[],
            1,
        ),
        spec(
            "azure-storage-account-key",
            r"(?i:accountkey)\s*=\s*([A-Za-z0-9+/]{86}==)",
            &["accountkey"],
            1,
        ),
        // A Heroku API key is a bare UUID, so only its name makes it a secret.
        spec(
            "heroku-api-key",
            r#"(?i)heroku[A-Za-z0-9_.-]{0,20}["']?\s*(?::=|=>|=|:)\s*["']?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"#,
            &["heroku"],
            1,
        ),
        // The value must end at a delimiter, so code such as
        // `password = getpass.getpass()` or `secret = cfg["x"]` is not taken for
        // a secret; a value starting with `$`, `{`, `<`, `%` is a placeholder.
        // A `:` counts only before a space or quote (YAML, JSON), because in a
        // URL `user:password@` it would swallow the host as well.
        spec(
            "generic-secret",
            r#"(?i)(?:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|access[_-]?token|auth[_-]?token)(?:\\?["'])?\s*(?:(?::=|=>|=)\s*(?:\\?["'`])?|:\s*\\?["'`]|:\s+)([^\s"'`,;&\\()\[\]{}<>$%][^\s"'`,;&\\()\[\]{}<>]{7,})(?:[\s"'`,;&\\)\]}]|$)"#,
            &[
                "passw",
                "passphrase",
                "secret",
                "api_key",
                "api-key",
                "apikey",
                "token",
            ],
            1,
        ),
        // Any scheme: database URLs, but also `https://user:token@host` git remotes.
        spec(
            "connection-string-password",
            r#"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:@/?#"'<>]*:([^\s@/?#"'<>]+)@[A-Za-z0-9\[_-]"#,
            &["://"],
            1,
        ),
    ]
}

/// A [`Redactor`] compiled on first use.
///
/// Compiling the built-in regexes is most of what a cold start costs, and a
/// before-hook (`eval`, a PreToolUse hook) never redacts. So a policy only
/// *validates* its own rules at load — a broken rule still fails the load —
/// and compiles the full set the first time output is redacted.
pub struct LazyRedactor {
    defaults: bool,
    rules: Vec<RedactRuleSpec>,
    cell: std::sync::OnceLock<Redactor>,
}

impl fmt::Debug for LazyRedactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazyRedactor")
            .field("defaults", &self.defaults)
            .field(
                "rules",
                &self.rules.iter().map(|r| &r.id).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl LazyRedactor {
    /// Checks `rules` (and their ids against the built-in set when
    /// `defaults`) without compiling the built-in set.
    pub fn new(
        defaults: bool,
        rules: Vec<RedactRuleSpec>,
    ) -> Result<LazyRedactor, Vec<RedactRuleError>> {
        let mut errors = match Redactor::compile(false, &rules) {
            Ok(_) => Vec::new(),
            Err(e) => e,
        };
        if defaults {
            let builtin: HashSet<String> = default_rules().into_iter().map(|r| r.id).collect();
            for r in rules.iter().filter(|r| builtin.contains(&r.id)) {
                errors.push(RedactRuleError {
                    id: r.id.clone(),
                    message: format!(
                        "id `{}` is already used by a built-in rule; choose another id",
                        r.id
                    ),
                });
            }
        }
        if errors.is_empty() {
            Ok(LazyRedactor {
                defaults,
                rules,
                cell: std::sync::OnceLock::new(),
            })
        } else {
            Err(errors)
        }
    }

    /// The compiled redactor.
    pub fn get(&self) -> &Redactor {
        self.cell.get_or_init(|| {
            // Both halves were checked: the policy's rules in `new`, the
            // built-in set by this module's tests. Should the built-in set
            // ever fail anyway, keep the policy's own rules rather than none.
            Redactor::compile(self.defaults, &self.rules)
                .or_else(|_| Redactor::compile(false, &self.rules))
                .or_else(|_| Redactor::compile(false, &[]))
                .unwrap_or_else(|_| unreachable!("an empty rule set always compiles"))
        })
    }

    /// Number of rules, without compiling them.
    pub fn len(&self) -> usize {
        self.rules.len()
            + if self.defaults {
                default_rules().len()
            } else {
                0
            }
    }

    /// True when there are no rules.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::OnceLock;

    // Secrets are assembled from parts at run time: a literal that looks like a
    // real token would trip secret scanners (GitHub push protection) on this file.
    const ALNUM: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const UPPER_B32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const HEX: &str = "0123456789abcdef";
    const LETTERS: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const DIGITS: &str = "0123456789";
    const B64: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
    const URLSAFE: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";

    /// `n` characters from `alphabet`, spread out (step 7) so every token mixes
    /// cases and digits rather than repeating one character.
    fn gen(alphabet: &str, n: usize, seed: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|i| chars[(i * 7 + seed) % chars.len()])
            .collect()
    }

    fn defaults() -> &'static Redactor {
        static R: OnceLock<Redactor> = OnceLock::new();
        R.get_or_init(|| Redactor::compile(true, &[]).expect("built-in rules compile"))
    }

    fn rule(id: &str, regex: &str, keywords: &[&str], secret_group: usize) -> RedactRuleSpec {
        spec(id, regex, keywords, secret_group)
    }

    fn compile_errors(rules: &[RedactRuleSpec]) -> Vec<RedactRuleError> {
        match Redactor::compile(false, rules) {
            Ok(r) => panic!("expected errors, compiled {r:?}"),
            Err(errors) => errors,
        }
    }

    /// `before + secret + after` becomes `before + [REDACTED:id] + after`, and
    /// `id` is the only rule that fires (a second one would be a false positive).
    fn assert_redacts(id: &str, before: &str, secret: &str, after: &str) {
        let r = defaults();
        let text = format!("{before}{secret}{after}");
        assert_eq!(
            r.redact(&text),
            format!("{before}[REDACTED:{id}]{after}"),
            "rule {id} on {text:?}"
        );
        assert_eq!(r.matching_rules(&text), vec![id], "rules matching {text:?}");
    }

    /// Like [`assert_redacts`] where the context is also a generic assignment
    /// (`X_API_KEY=`): both rules find the secret, the specific id labels it.
    fn assert_redacts_assigned(id: &str, before: &str, secret: &str, after: &str) {
        let r = defaults();
        let text = format!("{before}{secret}{after}");
        assert_eq!(
            r.redact(&text),
            format!("{before}[REDACTED:{id}]{after}"),
            "rule {id} on {text:?}"
        );
        assert_eq!(
            r.matching_rules(&text),
            vec![id, "generic-secret"],
            "rules matching {text:?}"
        );
    }

    fn assert_untouched(text: &str) {
        let r = defaults();
        assert!(
            matches!(r.redact(text), Cow::Borrowed(_)),
            "redacted {text:?} to {:?}",
            r.redact(text)
        );
        assert!(
            r.matching_rules(text).is_empty(),
            "{:?} match {text:?}",
            r.matching_rules(text)
        );
    }

    const TESTED_RULES: &[&str] = &[
        "aws-access-key-id",
        "aws-secret-access-key",
        "github-pat",
        "github-oauth",
        "github-app-token",
        "github-refresh-token",
        "github-fine-grained-pat",
        "gitlab-pat",
        "slack-bot-token",
        "slack-user-token",
        "slack-legacy-token",
        "slack-webhook-url",
        "stripe-secret-key",
        "openai-api-key",
        "anthropic-api-key",
        "google-api-key",
        "npm-access-token",
        "pypi-upload-token",
        "private-key",
        "jwt",
        "twilio-api-key",
        "sendgrid-api-key",
        "huggingface-access-token",
        "discord-bot-token",
        "azure-storage-account-key",
        "heroku-api-key",
        "generic-secret",
        "connection-string-password",
    ];

    #[test]
    fn every_built_in_rule_has_a_test_below() {
        let ids: Vec<&str> = defaults().rule_ids().collect();
        assert_eq!(ids, TESTED_RULES);
        assert!(ids.len() >= 20);
        for r in default_rules() {
            assert!(
                !r.keywords.is_empty() || r.id == "discord-bot-token",
                "{}",
                r.id
            );
            assert!(
                r.keywords.iter().all(|k| *k == k.to_lowercase()),
                "{}",
                r.id
            );
        }
    }

    #[test]
    fn aws_access_key_id() {
        let body = gen(UPPER_B32, 16, 3);
        assert_redacts("aws-access-key-id", "key: ", &format!("AKIA{body}"), " ok");
        assert_redacts("aws-access-key-id", "(", &format!("ASIA{body}"), ")");
        assert_untouched(&format!("key: AKIA{}", &body[..15]));
        assert_untouched(&format!("key: AKIA{body}X"));
        assert_untouched(&format!("key: AKIB{body}"));
        assert_untouched(&format!("key: AKIA{}", body.to_lowercase()));
    }

    #[test]
    fn aws_secret_access_key() {
        let secret = gen(B64, 40, 5);
        assert_redacts(
            "aws-secret-access-key",
            "aws_secret_access_key = ",
            &secret,
            "\nregion = us-east-1",
        );
        assert_redacts(
            "aws-secret-access-key",
            "export AWS_SECRET_ACCESS_KEY=\"",
            &secret,
            "\"",
        );
        assert_redacts(
            "aws-secret-access-key",
            "{\"SecretAccessKey\": \"",
            &secret,
            "\"}",
        );
        // Without the name it is just a 40-character string.
        assert_untouched(&format!("checksum {secret}"));
        assert_untouched(&format!("aws_secret_access_key = {}", &secret[..39]));
        assert_untouched(&format!("aws_secret_access_key = {secret}A"));
    }

    fn github_case(id: &str, prefix: &str) {
        let body = gen(ALNUM, 36, prefix.len() + 11);
        assert_redacts(id, "token ", &format!("{prefix}{body}"), " end");
        assert_untouched(&format!("token {prefix}{}", &body[..35]));
        assert_untouched(&format!("token {prefix}{body}a"));
        assert_untouched(&format!("token ghx_{body}"));
    }

    #[test]
    fn github_tokens() {
        github_case("github-pat", "ghp_");
        github_case("github-oauth", "gho_");
        github_case("github-app-token", "ghu_");
        github_case("github-app-token", "ghs_");
        github_case("github-refresh-token", "ghr_");
    }

    #[test]
    fn github_fine_grained_pat() {
        let token = format!("github_pat_{}_{}", gen(ALNUM, 22, 1), gen(ALNUM, 59, 2));
        assert_redacts("github-fine-grained-pat", "GH_TOKEN=", &token, "\n");
        assert_untouched(&format!("GH_TOKEN={}", &token[..token.len() - 1]));
        assert_untouched(&format!(
            "GH_TOKEN={}",
            token.replace("github_pat_", "github_pet_")
        ));
    }

    #[test]
    fn gitlab_pat() {
        let body = gen(URLSAFE, 20, 4);
        assert_redacts(
            "gitlab-pat",
            "PRIVATE-TOKEN: ",
            &format!("glpat-{body}"),
            ". Done",
        );
        let routable = format!("glpat-{}.01.{}", gen(URLSAFE, 27, 6), gen(HEX, 9, 1));
        assert_redacts("gitlab-pat", "t=", &routable, " ");
        assert_untouched(&format!("PRIVATE-TOKEN: glpat-{}", &body[..19]));
        assert_untouched(&format!("PRIVATE-TOKEN: glpot-{body}"));
    }

    #[test]
    fn slack_tokens() {
        let bot = format!(
            "xoxb-{}-{}-{}",
            gen(DIGITS, 11, 1),
            gen(DIGITS, 12, 2),
            gen(ALNUM, 24, 3)
        );
        assert_redacts("slack-bot-token", "SLACK_BOT_TOKEN=", &bot, "\n");
        assert_untouched(&format!(
            "xoxb-{}-{}",
            gen(DIGITS, 11, 1),
            gen(ALNUM, 24, 3)
        ));

        let user = format!(
            "xoxp-{}-{}-{}-{}",
            gen(DIGITS, 10, 1),
            gen(DIGITS, 11, 2),
            gen(DIGITS, 12, 3),
            gen(HEX, 32, 4)
        );
        assert_redacts("slack-user-token", "token: ", &user, "\n");
        assert_untouched(&format!(
            "token: xoxp-{}-{}-{}",
            gen(DIGITS, 10, 1),
            gen(DIGITS, 11, 2),
            gen(HEX, 32, 4)
        ));

        let legacy = format!("xoxr-{}", gen(ALNUM, 30, 5));
        assert_redacts("slack-legacy-token", "token: ", &legacy, " ");
        assert_redacts(
            "slack-legacy-token",
            "token: ",
            &format!("xoxa-2-{}", gen(ALNUM, 30, 5)),
            " ",
        );
        assert_untouched(&format!("token: xoxa-{}", gen(ALNUM, 7, 5)));
        assert_untouched(&format!("token: xoxz-{}", gen(ALNUM, 30, 5)));
    }

    #[test]
    fn slack_webhook_url() {
        let path = format!(
            "T{}/B{}/{}",
            gen(UPPER_B32, 8, 1),
            gen(UPPER_B32, 8, 2),
            gen(ALNUM, 24, 3)
        );
        let url = format!("https://hooks.slack.com/services/{path}");
        assert_redacts("slack-webhook-url", "POST ", &url, " failed");
        assert_untouched("see https://hooks.slack.com/services/ for setup");
        assert_untouched(&format!(
            "https://hooks.slack.com/services/T{}",
            gen(UPPER_B32, 8, 1)
        ));
        assert_untouched(&format!("https://hooks.example.com/services/{path}"));
    }

    #[test]
    fn stripe_secret_key() {
        let body = gen(ALNUM, 24, 8);
        assert_redacts_assigned(
            "stripe-secret-key",
            "Stripe.api_key = '",
            &format!("sk_live_{body}"),
            "'",
        );
        assert_redacts(
            "stripe-secret-key",
            "key ",
            &format!("rk_live_{}", gen(ALNUM, 99, 1)),
            "\n",
        );
        assert_untouched(&format!("key sk_live_{}", &body[..23]));
        // Publishable keys are meant to be public.
        assert_untouched(&format!("key pk_live_{body}"));
    }

    #[test]
    fn openai_api_key() {
        let proj = format!(
            "sk-proj-{}T3BlbkFJ{}",
            gen(URLSAFE, 74, 1),
            gen(URLSAFE, 74, 2)
        );
        assert_redacts_assigned("openai-api-key", "OPENAI_API_KEY=", &proj, "\n");
        let legacy = format!("sk-{}T3BlbkFJ{}", gen(ALNUM, 20, 3), gen(ALNUM, 20, 4));
        assert_redacts("openai-api-key", "key ", &legacy, " ");
        assert_untouched(&format!(
            "key sk-{}T3BlbkFJ{}",
            gen(ALNUM, 19, 3),
            gen(ALNUM, 20, 4)
        ));
        assert_untouched(&format!("key sk-{}", gen(ALNUM, 48, 3)));
        assert_untouched(&format!("branch sk-proj-{}", gen(ALNUM, 12, 3)));
    }

    #[test]
    fn anthropic_api_key() {
        let key = format!("sk-ant-api03-{}AA", gen(URLSAFE, 93, 7));
        assert_redacts_assigned("anthropic-api-key", "ANTHROPIC_API_KEY=", &key, "\n");
        assert_redacts("anthropic-api-key", "", &key, "");
        assert_untouched(&format!("x sk-ant-api03-{}", gen(URLSAFE, 40, 7)));
        assert_untouched(&format!("x sk-ant-xyz03-{}AA", gen(URLSAFE, 93, 7)));
    }

    #[test]
    fn google_api_key() {
        // Ends in `-`, where a plain `\b` would lose the last character.
        let key = format!("AIza{}-", gen(URLSAFE, 34, 9));
        assert_redacts("google-api-key", "?key=", &key, "&q=1");
        assert_untouched(&format!("?key=AIza{}", gen(URLSAFE, 34, 9)));
        assert_untouched(&format!("?key=AIza{}", gen(URLSAFE, 36, 9)));
        assert_untouched(&format!("?key=AIzb{}", gen(URLSAFE, 35, 9)));
    }

    #[test]
    fn npm_access_token() {
        let body = gen(ALNUM, 36, 12);
        assert_redacts_assigned(
            "npm-access-token",
            "//registry.npmjs.org/:_authToken=",
            &format!("npm_{body}"),
            "\n",
        );
        assert_untouched(&format!("token npm_{}", &body[..35]));
        assert_untouched(&format!("run npm_{}", "config_cache"));
    }

    #[test]
    fn pypi_upload_token() {
        let token = format!("pypi-AgEIcHlwaS5vcmc{}", gen(URLSAFE, 120, 2));
        assert_redacts_assigned("pypi-upload-token", "password = ", &token, "\n");
        assert_untouched(&format!("token pypi-AgEIcHlwaS5vcmc{}", gen(ALNUM, 20, 2)));
        assert_untouched(&format!("pkg pypi-AgEIcHlwaS5vcmX{}", gen(URLSAFE, 120, 2)));
    }

    fn pem_body() -> String {
        (0..4).map(|i| gen(B64, 64, i) + "\n").collect()
    }

    #[test]
    fn private_key() {
        let block = format!(
            "-----BEGIN RSA PRIVATE KEY-----\n{}-----END RSA PRIVATE KEY-----",
            pem_body()
        );
        assert_redacts("private-key", "id_rsa:\n", &block, "\nnext line");
        let plain = format!(
            "-----BEGIN PRIVATE KEY-----\n{}-----END PRIVATE KEY-----",
            pem_body()
        );
        assert_redacts("private-key", "", &plain, "\n");
        // JSON-escaped, as in a service-account file.
        let escaped = format!(
            "-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----",
            gen(B64, 64, 1)
        );
        assert_redacts("private-key", "{\"private_key\": \"", &escaped, "\\n\"}");
        // Cut short by a line limit: the key material still goes.
        let truncated = format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{}", pem_body());
        assert_redacts("private-key", "", &truncated, "[output truncated]");

        assert_untouched("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----");
        assert_untouched("the private key is in the vault");
    }

    #[test]
    fn two_private_keys_are_redacted_separately() {
        let block = format!(
            "-----BEGIN EC PRIVATE KEY-----\n{}-----END EC PRIVATE KEY-----",
            pem_body()
        );
        let text = format!("a\n{block}\nmiddle\n{block}\nz");
        assert_eq!(
            defaults().redact(&text),
            "a\n[REDACTED:private-key]\nmiddle\n[REDACTED:private-key]\nz"
        );
    }

    #[test]
    fn jwt() {
        let token = format!(
            "eyJ{}.eyJ{}.{}",
            gen(URLSAFE, 30, 1),
            gen(URLSAFE, 60, 2),
            gen(URLSAFE, 43, 3)
        );
        assert_redacts("jwt", "Authorization: Bearer ", &token, "\r\n");
        assert_untouched(&format!(
            "eyJ{}.eyJ{}",
            gen(URLSAFE, 30, 1),
            gen(URLSAFE, 60, 2)
        ));
        assert_untouched(&format!(
            "eyJ{}.abc{}.{}",
            gen(URLSAFE, 30, 1),
            gen(URLSAFE, 60, 2),
            gen(URLSAFE, 43, 3)
        ));
    }

    #[test]
    fn twilio_api_key() {
        let key = format!("SK{}", gen(HEX, 32, 5));
        assert_redacts_assigned("twilio-api-key", "TWILIO_API_KEY=", &key, "\n");
        assert_untouched(&format!("twilio key SK{}", gen(HEX, 31, 5)));
        assert_untouched(&format!("twilio key SK{}", gen(HEX, 33, 5)));
        assert_untouched(&format!("twilio key SK{}z", gen(HEX, 31, 5)));
        assert_untouched(&format!("id: AC{}", gen(HEX, 32, 5)));
    }

    #[test]
    fn sendgrid_api_key() {
        let key = format!("SG.{}.{}", gen(URLSAFE, 22, 1), gen(URLSAFE, 43, 2));
        assert_redacts_assigned("sendgrid-api-key", "SENDGRID_API_KEY='", &key, "'");
        assert_untouched(&format!(
            "SG.{}.{}",
            gen(URLSAFE, 21, 1),
            gen(URLSAFE, 43, 2)
        ));
        assert_untouched(&format!(
            "SG.{}.{}",
            gen(URLSAFE, 22, 1),
            gen(URLSAFE, 44, 2)
        ));
    }

    #[test]
    fn huggingface_access_token() {
        let token = format!("hf_{}", gen(LETTERS, 34, 6));
        assert_redacts("huggingface-access-token", "HF_TOKEN=", &token, "\n");
        assert_untouched(&format!("HF_TOKEN=hf_{}", gen(LETTERS, 33, 6)));
        assert_untouched(&format!("HF_TOKEN=hf_{}", gen(ALNUM, 34, 60)));
    }

    #[test]
    fn discord_bot_token() {
        let token = format!(
            "MT{}.{}.{}",
            gen(ALNUM, 22, 1),
            gen(URLSAFE, 6, 2),
            gen(URLSAFE, 38, 3)
        );
        assert_redacts("discord-bot-token", "client.run(\"", &token, "\")");
        assert_untouched(&format!(
            "MT{}.{}.{}",
            gen(ALNUM, 22, 1),
            gen(URLSAFE, 5, 2),
            gen(URLSAFE, 38, 3)
        ));
        assert_untouched(&format!(
            "XT{}.{}.{}",
            gen(ALNUM, 22, 1),
            gen(URLSAFE, 6, 2),
            gen(URLSAFE, 38, 3)
        ));
        assert_untouched("MyApplicationConfigurationX.setter.withSomethingElseVeryLongName");
    }

    #[test]
    fn azure_storage_account_key() {
        let key = format!("{}==", gen(B64, 86, 4));
        let before = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=";
        assert_redacts(
            "azure-storage-account-key",
            before,
            &key,
            ";EndpointSuffix=core.windows.net",
        );
        assert_untouched(&format!("AccountKey={}==", gen(B64, 60, 4)));
        assert_untouched(&format!("blob {key}"));
    }

    #[test]
    fn heroku_api_key() {
        let uuid = format!(
            "{}-{}-{}-{}-{}",
            gen(HEX, 8, 1),
            gen(HEX, 4, 2),
            gen(HEX, 4, 3),
            gen(HEX, 4, 4),
            gen(HEX, 12, 5)
        );
        assert_redacts_assigned("heroku-api-key", "HEROKU_API_KEY=", &uuid, "\n");
        assert_untouched(&format!("request_id={uuid}"));
        assert_untouched(&format!("heroku key {}", &uuid[..35]));
    }

    #[test]
    fn generic_secret_keeps_context() {
        assert_redacts("generic-secret", "password=", "hunter2hunter2", "");
        assert_redacts("generic-secret", "DB_PASSWORD=", "c0rrect-h0rse", "\n");
        assert_redacts(
            "generic-secret",
            "{\"client_secret\": \"",
            "s3cr3t-value!",
            "\"}",
        );
        assert_redacts("generic-secret", "  api_key: '", "abcd1234efgh", "'\n");
        assert_redacts(
            "generic-secret",
            "https://x/?apikey=",
            "abcd1234efgh",
            "&page=2",
        );
        assert_redacts(
            "generic-secret",
            "pass := \"x\"\npassword := `",
            "abcd1234efgh",
            "`",
        );
        assert_redacts(
            "generic-secret",
            "{\\\"password\\\": \\\"",
            "abcd1234efgh",
            "\\\"}",
        );
        assert_redacts("generic-secret", "SECRET_KEY=", "pa$$word12", "");
    }

    #[test]
    fn generic_secret_near_misses() {
        assert_untouched("password=hunter2");
        assert_untouched("password: 1234567");
        assert_untouched("password = getpass.getpass()");
        assert_untouched("secret = os.environ[\"SECRET\"]");
        assert_untouched("password=${DB_PASSWORD}");
        assert_untouched("password: <your-password-here>");
        assert_untouched("api_key = config.get(\"api_key\")");
        assert_untouched("the password is hunter2hunter2");
        assert_untouched("DB_PASSWORD_FILE=/run/secrets/db");
    }

    #[test]
    fn connection_string_password() {
        assert_redacts(
            "connection-string-password",
            "DATABASE_URL=postgres://app:",
            "s3cretPass",
            "@db.internal:5432/app",
        );
        assert_redacts(
            "connection-string-password",
            "mongodb+srv://admin:",
            "x",
            "@cluster0.example.net/",
        );
        assert_redacts(
            "connection-string-password",
            "redis://:",
            "redispass99",
            "@localhost:6379/0",
        );
        assert_untouched("postgres://app@db.internal:5432/app");
        assert_untouched("http://localhost:8080/path");
        assert_untouched("ssh://git@github.com:22/org/repo.git");
    }

    #[test]
    fn borrowed_when_clean() {
        let r = defaults();
        let clean =
            "fn main() {\n    println!(\"hello, world\");\n}\n// task: ask for disk space\n";
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
    fn keyword_absent_means_the_regex_does_not_run() {
        let r = Redactor::compile(false, &[rule("gated", r"secret\d+", &["zzz"], 0)]).unwrap();
        assert!(matches!(r.redact("secret123"), Cow::Borrowed(_)));
        assert!(r.matching_rules("secret123").is_empty());
        assert_eq!(r.redact("zzz secret123"), "zzz [REDACTED:gated]");
        // Keywords ignore ASCII case, like most secret formats' context does.
        assert_eq!(r.redact("ZzZ secret123"), "ZzZ [REDACTED:gated]");
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
        assert_eq!(errors[0].message, "invalid regex: unclosed group");
    }

    #[test]
    fn error_regex_too_large() {
        let errors = compile_errors(&[rule("huge", r"\w{2000}", &[], 0)]);
        assert_eq!(
            errors,
            vec![RedactRuleError {
                id: "huge".into(),
                message: "regex is too large; simplify it".into()
            }]
        );
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
}

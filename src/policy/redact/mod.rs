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

mod builtin;
#[cfg(test)]
mod tests;

pub use builtin::default_rules;

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

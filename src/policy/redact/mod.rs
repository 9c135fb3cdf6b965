//! Secret redaction: replaces secrets in tool output with `[REDACTED:rule-id]`.
//!
//! Every rule is a regex with a bounded longest match, usually with literal
//! keywords. One prefilter pass over the text finds where keywords occur,
//! and a rule's regex runs only in windows around its own keywords (rules
//! without keywords: around the byte classes their matches begin with,
//! where the prefilter can find those, else over all text), so clean text
//! costs about one scan no matter how many rules a policy has. Likewise a
//! rule's automata are built only when a scan first needs them
//! ([`LazyRedactor`]): an output that wakes one rule builds one. The same scanner serves whole texts
//! ([`Redactor::redact`]) and streams ([`Redactor::stream`]) and gives the
//! same result for any split of a text into chunks.
//!
//! Modules: [`rules`] (specs, entropy, the compiled rule), `bounded`
//! (regexes checked and built under caps), `caps` (per-repetition caps and
//! the overflow that keeps a long secret redacted), `allowlist`,
//! `prefilter` (keywords) with its SIMD first stage `fingerprint` (and its
//! AVX-512 step `permute`), `prefix` (the class prefixes of rules without
//! keywords), `scan`
//! (the windowed search), [`stream`],
//! [`gitleaks`] (importing gitleaks configs), `builtin` (the default set).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};

mod allowlist;
mod bounded;
mod builtin;
mod caps;
mod entropy;
mod fingerprint;
pub mod gitleaks;
mod json;
mod permute;
mod prefilter;
mod prefix;
pub mod rules;
mod scan;
pub mod stream;
pub mod syntax;
#[cfg(test)]
mod tests;

pub use builtin::default_rules;
pub use entropy::shannon_entropy;
pub use rules::{
    AllowTarget, AllowlistSpec, Continuation, KeywordScope, RedactRuleError, RedactRuleSpec,
    SecretGroup, KEYWORD_CONTEXT, LINE_CONTEXT, MAX_MATCH_LEN,
};
pub use stream::{redact_io, StreamRedactor};

use allowlist::Allowlist;
use prefilter::Keywords;
use rules::{check_rule, check_syntax, compile_rule, CompiledRule};
use scan::{Scanner, Span};
use stream::{sort_spans, Emitter};

/// A compiled, immutable set of redaction rules.
pub struct Redactor {
    rules: Vec<CompiledRule>,
    /// `None` when no rule has keywords.
    keywords: Option<Keywords>,
    /// Scanners of finished texts, reset and reused: setting one up (a
    /// state per rule) was most of the cost of redacting a short string.
    scanners: Mutex<Vec<Scanner>>,
}

/// How many idle scanners a [`Redactor`] keeps (one per thread redacting at
/// once is plenty).
const KEPT_SCANNERS: usize = 8;

impl fmt::Debug for Redactor {
    // Ids only: the regexes and automaton are large and say little in a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("rules", &self.rule_ids().collect::<Vec<_>>())
            .finish()
    }
}

impl Redactor {
    /// Compiles `rules`, preceded by the built-in set when `defaults`.
    ///
    /// Every bad rule is reported, not only the first, so one run of `check`
    /// shows everything to fix: a bad or empty regex, one that is too large
    /// or matches the empty string, a `secret_group` the regex does not
    /// have, an empty id or keyword, a bad allowlist, and duplicate ids.
    /// Every rule's automata are built here (that is how "too large" is
    /// known); [`LazyRedactor`] builds each on first use instead.
    pub fn compile(
        defaults: bool,
        rules: &[RedactRuleSpec],
    ) -> Result<Redactor, Vec<RedactRuleError>> {
        Redactor::compile_with(defaults, rules, &[])
    }

    /// Like [`Redactor::compile`], with `allowlists` applying to every rule.
    pub fn compile_with(
        defaults: bool,
        rules: &[RedactRuleSpec],
        allowlists: &[AllowlistSpec],
    ) -> Result<Redactor, Vec<RedactRuleError>> {
        let builtin = if defaults {
            default_rules()
        } else {
            Vec::new()
        };
        Redactor::assemble(&builtin, rules, allowlists, true, false)
    }

    /// Checks every rule and prepares the set; with `eager`, also builds
    /// every automaton (so a rule too large to build is an error here),
    /// else each is built the first time a scan needs it. With
    /// `builtin_clash_ok`, a rule of `rules` may share a built-in rule's id
    /// (an imported gitleaks rule): both run, under the same label.
    fn assemble(
        builtin: &[RedactRuleSpec],
        rules: &[RedactRuleSpec],
        allowlists: &[AllowlistSpec],
        eager: bool,
        builtin_clash_ok: bool,
    ) -> Result<Redactor, Vec<RedactRuleError>> {
        let builtin_count = builtin.len();
        let mut errors = Vec::new();
        let mut shared = Vec::new();
        for a in allowlists {
            match Allowlist::compile(a) {
                Ok(a) => shared.push(a),
                Err(message) => errors.push(RedactRuleError {
                    id: String::new(),
                    message,
                }),
            }
        }
        let mut compiled = Vec::new();
        let mut first_index: HashMap<&str, usize> = HashMap::new();
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
                if builtin_clash_ok && earlier < builtin_count && index >= builtin_count {
                    // Checked again below like any rule; it just keeps its id.
                } else {
                    fail(if earlier < builtin_count {
                        "duplicate rule id: a built-in rule already uses it; choose another id"
                            .to_string()
                    } else {
                        "duplicate rule id: an earlier rule already uses it".to_string()
                    });
                    ok = false;
                }
            } else {
                first_index.insert(&spec.id, index);
            }
            let rule = check_rule(spec)
                .and_then(|a| compile_rule(spec, a, &shared))
                .and_then(|rule| {
                    if eager {
                        rule.build_now()?;
                    }
                    Ok(rule)
                });
            match (rule, ok) {
                (Ok(rule), true) => compiled.push(rule),
                (Ok(_), false) => {}
                (Err(message), _) => fail(message),
            }
        }
        let keywords = match Keywords::new(
            compiled
                .iter()
                .enumerate()
                .map(|(i, r)| (i as u32, r.keywords.as_slice())),
            compiled
                .iter()
                .enumerate()
                .map(|(i, r)| (i as u32, r.prefix.as_slice())),
        ) {
            Ok(k) => k,
            Err(message) => {
                errors.push(RedactRuleError {
                    id: String::new(),
                    message,
                });
                None
            }
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Redactor {
            rules: compiled,
            keywords,
            scanners: Mutex::default(),
        })
    }

    /// Replaces every secret with `[REDACTED:rule-id]`. Borrowed when nothing
    /// matched (the common case must not allocate).
    ///
    /// Overlapping secrets found by different rules become one redaction
    /// covering both, labelled with the rule whose match starts first (then
    /// the longer one, then the earlier rule), so no part of either secret
    /// survives and the output is never garbled.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        self.apply(text, self.spans(text))
    }

    /// [`Redactor::redact`] with a scanner the caller holds (for walks over
    /// many strings, which take a scanner once).
    fn redact_in<'a>(&self, scanner: &mut Scanner, text: &'a str) -> Cow<'a, str> {
        self.apply(text, self.spans_in(scanner, text))
    }

    /// `text` with `spans` (a scan's, in any order) redacted.
    fn apply<'a>(&self, text: &'a str, mut spans: Vec<Span>) -> Cow<'a, str> {
        if spans.is_empty() {
            return Cow::Borrowed(text);
        }
        sort_spans(&mut spans);
        let mut out = String::with_capacity(text.len());
        let mut emitter = Emitter::default();
        for span in &spans {
            emitter.span(self, span, text, 0, &mut out);
        }
        emitter.text_until(text.len(), text, 0, &mut out);
        Cow::Owned(out)
    }

    /// Ids of the rules that match somewhere in `text`, in rule order, for
    /// tests, `check` and decision logs.
    ///
    /// A rule counts when it would redact something on its own, so the list
    /// agrees with [`Redactor::redact`] even where overlapping secrets were
    /// merged under another rule's id.
    pub fn matching_rules(&self, text: &str) -> Vec<&str> {
        let mut hit = vec![false; self.rules.len()];
        for span in self.spans(text) {
            hit[span.rule as usize] = true;
        }
        self.rules
            .iter()
            .zip(hit)
            .filter(|(_, hit)| *hit)
            .map(|(r, _)| r.id.as_str())
            .collect()
    }

    /// A streaming redactor over this rule set: feed chunks with
    /// [`StreamRedactor::push`], end with [`StreamRedactor::finish`]. The
    /// concatenated output equals [`Redactor::redact`] of the concatenated
    /// input, for any split.
    pub fn stream(&self) -> StreamRedactor<'_> {
        StreamRedactor::new(self)
    }

    /// Number of rules.
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

    /// Ids of the rules whose automata have been built so far: a rule is
    /// built the first time a scan needs it (a keyword of it occurs, or it
    /// has none), unless the set was made by [`Redactor::compile`], which
    /// builds every rule to check it.
    pub fn built_rule_ids(&self) -> impl Iterator<Item = &str> {
        self.rules
            .iter()
            .filter(|r| r.is_built())
            .map(|r| r.id.as_str())
    }

    /// The most text a stream holds back beyond the current chunk: the
    /// longest match of any rule plus the longest keyword.
    pub fn max_hold_back(&self) -> usize {
        let longest = self
            .rules
            .iter()
            .map(|r| 2 * (r.bound + r.context))
            .max()
            .unwrap_or(0);
        longest + self.keywords.as_ref().map_or(0, Keywords::max_len) + self.look_behind()
    }

    /// Text a stream keeps before its frontier: enough for `\b` and `^`,
    /// or for the line of a match when a rule has a line allowlist.
    pub(crate) fn look_behind(&self) -> usize {
        if self.rules.iter().any(|r| r.needs_line) {
            LINE_CONTEXT
        } else {
            stream::LOOK_BEHIND
        }
    }

    fn spans(&self, text: &str) -> Vec<Span> {
        self.with_scanner(|scanner| self.spans_in(scanner, text))
    }

    /// The spans of `text`, found by `scanner` (whatever text it scanned before).
    fn spans_in(&self, scanner: &mut Scanner, text: &str) -> Vec<Span> {
        let mut spans = Vec::new();
        scanner.reset();
        scanner.advance(self, text, 0, true, &mut spans);
        spans
    }

    /// Runs `f` with a kept scanner (or a new one), kept again after: one
    /// per walk over a JSON value's strings, not one per string.
    fn with_scanner<R>(&self, f: impl FnOnce(&mut Scanner) -> R) -> R {
        let kept = self.kept_scanners().pop();
        let mut scanner = kept.unwrap_or_else(|| Scanner::new(self));
        let out = f(&mut scanner);
        let mut kept = self.kept_scanners();
        if kept.len() < KEPT_SCANNERS {
            kept.push(scanner);
        }
        out
    }

    /// The spans of `text` from a new scanner that visits every rule's
    /// state, as it did before it kept track of the touched ones: the slow
    /// path that tests hold the fast one to.
    #[cfg(test)]
    fn spans_visiting_every_rule(&self, text: &str) -> Vec<Span> {
        let mut spans = Vec::new();
        let mut scanner = Scanner::new(self);
        scanner.touch_all();
        scanner.advance(self, text, 0, true, &mut spans);
        spans
    }

    fn kept_scanners(&self) -> std::sync::MutexGuard<'_, Vec<Scanner>> {
        self.scanners.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A [`Redactor`] compiled on first use, rule by rule.
///
/// Building the rules' automata is most of what a cold start costs, a
/// before-hook (`eval`, a PreToolUse hook) never redacts, and an after-hook's
/// output usually wakes one or two rules. So a policy only *checks* its rules
/// at load — a broken rule still fails the load — prepares the set (checks,
/// keyword prefilter) the first time output is redacted, and builds a rule's
/// automata the first time a scan needs them.
pub struct LazyRedactor {
    defaults: bool,
    rules: Vec<RedactRuleSpec>,
    allowlists: Vec<AllowlistSpec>,
    cell: OnceLock<Redactor>,
    /// Rules dropped because they failed to build at first use.
    dropped: Mutex<Vec<RedactRuleError>>,
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
    /// Checks `rules` fully (and their ids against the built-in set when
    /// `defaults`) without compiling the built-in set.
    pub fn new(
        defaults: bool,
        rules: Vec<RedactRuleSpec>,
    ) -> Result<LazyRedactor, Vec<RedactRuleError>> {
        LazyRedactor::with_imports(defaults, rules, Vec::new(), Vec::new())
    }

    /// Like [`LazyRedactor::new`], plus `imported` rules (from gitleaks
    /// files) that are only checked, not built, at load, so importing a large
    /// config keeps loads fast. An imported rule with a built-in rule's id
    /// runs *next to* the built-in one (both redact under that id; see
    /// [`LazyRedactor::clashes`]): importing a config must never make the
    /// redaction weaker than the defaults. `allowlists` apply to every rule.
    pub fn with_imports(
        defaults: bool,
        rules: Vec<RedactRuleSpec>,
        imported: Vec<RedactRuleSpec>,
        allowlists: Vec<AllowlistSpec>,
    ) -> Result<LazyRedactor, Vec<RedactRuleError>> {
        // Global allowlists are checked once by the caller (`AllowlistSpec::check`).
        let mut errors = match Redactor::compile(false, &rules) {
            Ok(_) => Vec::new(),
            Err(e) => e,
        };
        // Only the policy's own rules can clash with a built-in id; without
        // any, the built-in set is not built (a hook loads this every call).
        let builtin: Vec<String> = if defaults && !rules.is_empty() {
            default_rules().into_iter().map(|r| r.id).collect()
        } else {
            Vec::new()
        };
        for r in rules.iter().filter(|r| builtin.contains(&r.id)) {
            errors.push(RedactRuleError {
                id: r.id.clone(),
                message: format!(
                    "id `{}` is already used by a built-in rule; choose another id",
                    r.id
                ),
            });
        }
        // Imported files can be large: only the cheap checks now; the rest
        // happen at first use, and a rule failing them is dropped and listed
        // by `dropped` (which `toolgate check` reports).
        for (i, r) in imported.iter().enumerate() {
            if let Err(message) = check_syntax(r) {
                errors.push(RedactRuleError {
                    id: r.id.clone(),
                    message,
                });
            }
            // A built-in id is fine (both rules run); clashing with a rule
            // written in the policy, or with another imported file, is more
            // likely an accident.
            let clash = if rules.iter().any(|p| p.id == r.id) {
                Some("a rule of the policy")
            } else if imported[..i].iter().any(|p| p.id == r.id) {
                Some("a rule imported from another gitleaks file")
            } else {
                None
            };
            if let Some(other) = clash {
                errors.push(RedactRuleError {
                    id: r.id.clone(),
                    message: format!("duplicate rule id: {other} already uses it"),
                });
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut all = rules;
        all.extend(imported);
        Ok(LazyRedactor {
            defaults,
            rules: all,
            allowlists,
            cell: OnceLock::new(),
            dropped: Mutex::new(Vec::new()),
        })
    }

    /// The redactor: its rules checked and its prefilter built on the first
    /// call; each rule's automata are built when a scan first needs them.
    pub fn get(&self) -> &Redactor {
        self.cell.get_or_init(|| {
            // Built-in rules stay even where an imported rule has their id:
            // an imported `private-key` or `jwt` must not take away the
            // built-in rule's coverage.
            let builtin = if self.defaults {
                default_rules()
            } else {
                Vec::new()
            };
            let mut specs = self.rules.clone();
            // The policy's own rules were built at load and the built-in ones
            // are built by a test, so they build again; an imported rule was
            // only checked for syntax. One failing the remaining checks is
            // dropped and reported by `dropped`, and the others still run. One
            // whose automaton cannot be built fails closed when it is woken
            // (see `CompiledRule::built`), and `unbuildable` reports it.
            match Redactor::assemble(&builtin, &specs, &self.allowlists, false, true) {
                Ok(r) => r,
                Err(errors) => {
                    specs.retain(|s| !errors.iter().any(|e| e.id == s.id));
                    if let Ok(mut d) = self.dropped.lock() {
                        d.extend(errors);
                    }
                    Redactor::assemble(&builtin, &specs, &self.allowlists, false, true)
                        .or_else(|_| Redactor::compile(false, &[]))
                        .unwrap_or_else(|_| unreachable!("an empty rule set always compiles"))
                }
            }
        })
    }

    /// Checks the rules now and returns those that had to be dropped, for `check`.
    pub fn dropped(&self) -> Vec<RedactRuleError> {
        self.get();
        self.dropped.lock().map(|d| d.clone()).unwrap_or_default()
    }

    /// Builds every rule now and returns those whose automaton cannot be
    /// built (they redact the text around their keywords whole), for
    /// `check`. Costs what building the whole set costs.
    pub fn unbuildable(&self) -> Vec<RedactRuleError> {
        self.get()
            .rules
            .iter()
            .filter_map(|r| {
                r.build_now().err().map(|message| RedactRuleError {
                    id: r.id.clone(),
                    message,
                })
            })
            .collect()
    }

    /// Builds every rule now and returns, by rule, what its caps cannot
    /// honour: an unbounded repetition outside the secret (context such as
    /// `curl\b.*` before `-u`) is capped, and a match needing more of it is
    /// missed. (Repetitions inside the secret keep matching past their caps.)
    /// For `check`.
    pub fn limits(&self) -> Vec<RedactRuleError> {
        self.get()
            .rules
            .iter()
            .filter_map(|r| {
                let cap = r.built().context_cap?;
                Some(RedactRuleError {
                    id: r.id.clone(),
                    message: format!("an unbounded repetition around the secret is capped at {cap} repetitions, so a secret with more text than that between it and the rest of the pattern is not found"),
                })
            })
            .collect()
    }

    /// Number of rules, without compiling them (a built-in rule and an
    /// imported one with its id count as two: both run).
    pub fn len(&self) -> usize {
        let builtin = if self.defaults {
            default_rules().len()
        } else {
            0
        };
        builtin + self.rules.len()
    }

    /// Ids of the rules given both by the built-in set and by an imported
    /// file, in import order: both run, and `check` lists each.
    pub fn clashes(&self) -> Vec<String> {
        // No imported rules: nothing can clash (and the built-in set, which
        // costs a hook start to list, is not needed).
        if !self.defaults || self.rules.is_empty() {
            return Vec::new();
        }
        let builtin: Vec<String> = default_rules().into_iter().map(|r| r.id).collect();
        self.rules
            .iter()
            .filter(|r| builtin.contains(&r.id))
            .map(|r| r.id.clone())
            .collect()
    }

    /// True when there are no rules.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

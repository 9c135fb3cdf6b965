//! Rule specs as policies and gitleaks files declare them, and their
//! compilation into bounded regexes with secret groups, entropy thresholds and
//! allowlists.
//!
//! Every compiled regex has a known longest match. That bound is what lets the
//! scanner run a rule only in a window around its keyword hits, and lets a
//! stream hold back a fixed amount of text: repetitions without an upper
//! bound (`+`, `*`, `{n,}`) are capped at compile time, with an overflow
//! that keeps redacting a secret longer than the cap (see `caps`).

use std::sync::OnceLock;

use regex_automata::meta;

use super::allowlist::{line_around, Allowlist};
pub use super::allowlist::{AllowTarget, AllowlistSpec, LINE_CONTEXT};
use super::bounded::{analyze, build, Analyzed, CompiledBlock, Overflow};
pub use super::bounded::{SecretGroup, MAX_MATCH_LEN};
use super::entropy::shannon_entropy;

/// How a block-shaped secret continues after its opening match (a private
/// key's body after its `BEGIN` line). The body is taken piece by piece, so a
/// block of any length streams in constant memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Continuation {
    /// One piece of the body, matched anchored where the previous piece ended.
    pub piece: String,
    /// The closing line, tried before each piece; it ends the block.
    pub footer: String,
}

/// One redaction rule as a policy, a gitleaks file or the built-in set declares it.
///
/// Regexes are in the `regex` crate's syntax with ASCII-only `\d`, `\w`, `\s`
/// and `\b` (see [`super::syntax`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RedactRuleSpec {
    /// Identifier shown in the replacement text `[REDACTED:id]`; unique within a set.
    pub id: String,
    /// The pattern to redact, in the syntax of the `regex` crate.
    pub regex: String,
    /// Lower-cased literal strings, at least one of which a match must contain
    /// (ignoring ASCII case): the rule runs only near them. Empty: the regex
    /// runs over all text.
    pub keywords: Vec<String>,
    /// Which part of a match is replaced; the rest stays, e.g. `password=`.
    pub secret_group: SecretGroup,
    /// Minimum Shannon entropy (bits per character) of the secret; a lower one is not redacted.
    pub entropy: Option<f64>,
    /// Findings that are not secrets.
    pub allowlists: Vec<AllowlistSpec>,
    /// For block-shaped secrets: how the block goes on after the match.
    pub continuation: Option<Continuation>,
    /// Where a keyword must be for a match to count.
    pub keyword_scope: KeywordScope,
}

/// Where a rule's keyword must occur for a match of its regex to count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeywordScope {
    /// In the match itself (toolgate's own rules: their keywords are literal
    /// parts of the format).
    #[default]
    Match,
    /// Anywhere within [`KEYWORD_CONTEXT`] bytes of the match's window
    /// (gitleaks' rules: gitleaks asks only that the keyword be somewhere in
    /// the text it scans, e.g. `sourcegraph: <token>`). Bounded, because a
    /// stream has no end to look for it in.
    Near,
}

/// How far beyond a rule's longest match a [`KeywordScope::Near`] keyword
/// may be from where the match can start or end.
pub const KEYWORD_CONTEXT: usize = 256;

/// Why a rule could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedactRuleError {
    /// Id of the offending rule, as written in the policy.
    pub id: String,
    /// What is wrong, phrased for the person who wrote the rule.
    pub message: String,
}

/// What building a rule's regex gives: the automata, and how far its matches reach.
pub(super) struct Built {
    pub regex: meta::Regex,
    /// Longest match in bytes: the half-width of the window around a keyword.
    pub max_len: usize,
    /// Shortest match of `regex` in bytes (0 when unknown).
    pub min_len: usize,
    pub block: Option<CompiledBlock>,
    /// For a regex with capped repetitions: how a match that reached a cap
    /// goes on.
    pub overflow: Option<Overflow>,
    /// See [`Capped::context_cap`].
    pub context_cap: Option<u32>,
    /// Why the automaton could not be built, in which case `regex` is
    /// [`fail_closed_regex`] and every window of the rule is redacted whole.
    pub error: Option<String>,
}

/// One rule, checked and ready to run. Its automata are built the first
/// time a scan needs them (see [`CompiledRule::built`]): most texts wake few
/// rules, and building is most of what a rule costs.
pub(super) struct CompiledRule {
    pub id: String,
    /// Lower-cased; a match must contain one. Empty: the rule runs
    /// everywhere, or only where `prefix` occurs when the prefilter finds it.
    pub keywords: Vec<Box<[u8]>>,
    /// For a rule without keywords or continuation: the byte classes every
    /// match begins with (see `prefix`), else empty.
    pub prefix: Vec<super::prefix::ByteSet>,
    pub group: SecretGroup,
    pub entropy: Option<f64>,
    pub allowlists: Vec<Allowlist>,
    /// The longest match the regex can have, known before it is built. The
    /// built regex's `max_len` is the same unless its automaton needed a
    /// smaller repetition cap; where it must not depend on whether the rule
    /// was built yet (a stream's hold-back), this is used.
    pub bound: usize,
    /// How much wider than the longest match a window around a keyword is:
    /// [`KEYWORD_CONTEXT`] for [`KeywordScope::Near`], else 0.
    pub context: usize,
    /// Whether a match must contain a keyword itself.
    keyword_in_match: bool,
    /// Whether an allowlist tests the match's line: the scanner then needs
    /// [`LINE_CONTEXT`] bytes (or a line end) on each side of a match.
    pub needs_line: bool,
    regex: Analyzed,
    block: Option<(Analyzed, Analyzed)>,
    built: OnceLock<Built>,
}

/// The checks that need no Unicode tables: syntax (the features the `regex`
/// crate lacks), keywords, entropy and the secret group's existence. A few
/// microseconds per rule, so a load can afford it for a whole gitleaks file;
/// [`check_rule`] adds the rest when the rule is compiled.
pub(super) fn check_syntax(spec: &RedactRuleSpec) -> Result<(), String> {
    if spec.regex.is_empty() {
        return Err("regex is empty".to_string());
    }
    check_fields(spec)?;
    let groups =
        super::syntax::capture_groups(&spec.regex).map_err(|e| format!("invalid regex: {e}"))?;
    if let SecretGroup::Index(n) = spec.secret_group {
        if n > groups {
            return Err(format!(
                "secret_group {n} does not exist: the regex has {groups} capture group{}",
                if groups == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(())
}

fn check_fields(spec: &RedactRuleSpec) -> Result<(), String> {
    if spec.keywords.iter().any(|k| k.is_empty()) {
        return Err("keywords must not be empty strings".to_string());
    }
    if let Some(e) = spec.entropy {
        if !(0.0..=8.0).contains(&e) {
            return Err(format!(
                "entropy {e} is out of range: Shannon entropy per character is between 0 and 8"
            ));
        }
    }
    Ok(())
}

/// Checks a spec as far as that is cheap (everything but building the
/// automata), returning the analysis for [`compile_rule`].
pub(super) fn check_rule(spec: &RedactRuleSpec) -> Result<Analyzed, String> {
    check_fields(spec)?;
    analyze(&spec.regex, spec.secret_group)
}

/// Prepares one rule; `analyzed` comes from [`check_rule`] on the same spec.
/// Everything but the automata: those are built by [`CompiledRule::built`].
/// `extra_allowlists` (compiled once for all rules) apply after the rule's own.
pub(super) fn compile_rule(
    spec: &RedactRuleSpec,
    analyzed: Analyzed,
    extra_allowlists: &[Allowlist],
) -> Result<CompiledRule, String> {
    let mut allowlists = Vec::new();
    for a in &spec.allowlists {
        allowlists.push(Allowlist::compile(a)?);
    }
    allowlists.extend(extra_allowlists.iter().cloned());
    let block = match &spec.continuation {
        None => None,
        Some(c) => Some((
            analyze(&c.piece, SecretGroup::Whole)?,
            analyze(&c.footer, SecretGroup::Whole)?,
        )),
    };
    let needs_line = allowlists.iter().any(|a| a.target == AllowTarget::Line);
    let prefix = if spec.keywords.is_empty() && spec.continuation.is_none() {
        analyzed.class_prefix()
    } else {
        Vec::new()
    };
    Ok(CompiledRule {
        prefix,
        id: spec.id.clone(),
        keywords: spec
            .keywords
            .iter()
            .map(|k| k.to_ascii_lowercase().into_bytes().into_boxed_slice())
            .collect(),
        group: spec.secret_group,
        entropy: spec.entropy,
        allowlists,
        bound: analyzed.max_len,
        context: match spec.keyword_scope {
            KeywordScope::Near if !spec.keywords.is_empty() => KEYWORD_CONTEXT,
            _ => 0,
        },
        keyword_in_match: spec.keyword_scope == KeywordScope::Match,
        needs_line,
        regex: analyzed,
        block,
        built: OnceLock::new(),
    })
}

/// What a rule whose automaton cannot be built runs instead: any text, up to
/// 64 characters (256 bytes) a match. With the rule's windows as wide as its
/// regex could reach and its matches joined, the text around each of its
/// keywords is redacted whole: a rule that cannot run fails closed.
fn fail_closed_regex() -> meta::Regex {
    static REGEX: OnceLock<meta::Regex> = OnceLock::new();
    REGEX
        .get_or_init(|| {
            meta::Regex::new(r"(?s:.){1,64}")
                .unwrap_or_else(|_| unreachable!("a fixed, small pattern builds"))
        })
        .clone()
}

impl CompiledRule {
    /// The rule's automata, built on first use (once, whichever thread asks
    /// first). A rule that passed [`Redactor::compile`](super::Redactor::compile)
    /// always builds; one that was only checked (an imported rule built
    /// lazily) and cannot be built gets [`fail_closed_regex`] instead.
    pub fn built(&self) -> &Built {
        self.built.get_or_init(|| match self.build() {
            Ok(built) => built,
            Err(error) => Built {
                regex: fail_closed_regex(),
                max_len: self.bound,
                min_len: 0,
                block: None,
                overflow: None,
                context_cap: None,
                error: Some(error),
            },
        })
    }

    /// Builds the automata and the allowlists' regexes now, reporting an
    /// error instead of failing closed.
    pub fn build_now(&self) -> Result<(), String> {
        if let Some(e) = &self.built().error {
            return Err(e.clone());
        }
        self.allowlists.iter().try_for_each(Allowlist::build_now)
    }

    /// Whether the automata have been built.
    pub fn is_built(&self) -> bool {
        self.built.get().is_some()
    }

    fn build(&self) -> Result<Built, String> {
        let main = build(&self.regex)?;
        let block = match &self.block {
            None => None,
            Some((piece, footer)) => {
                let piece = build(piece)?;
                let footer = build(footer)?;
                Some(CompiledBlock {
                    piece: piece.regex,
                    piece_max: piece.max_len,
                    footer: footer.regex,
                    footer_max: footer.max_len,
                    footer_first: true,
                })
            }
        };
        Ok(Built {
            regex: main.regex,
            max_len: main.max_len,
            min_len: main.min_len,
            block,
            overflow: main.overflow,
            context_cap: main.context_cap,
            error: None,
        })
    }

    /// Whether the match `[start, end)` of `text` counts, and if so the
    /// secret's range within it. `groups` are the capture groups' ranges
    /// (index 0 = group 1), when the rule needs them.
    pub fn secret(
        &self,
        text: &str,
        start: usize,
        end: usize,
        groups: &[Option<(usize, usize)>],
    ) -> Option<(usize, usize)> {
        if self.built().error.is_some() {
            return Some((start, end));
        }
        let whole = &text[start..end];
        if !self.keyword_holds(whole) {
            return None;
        }
        let (s, e) = match self.group {
            SecretGroup::Whole => (start, end),
            SecretGroup::Index(n) => groups.get(n - 1).copied().flatten()?,
            SecretGroup::FirstNonEmpty => groups
                .iter()
                .flatten()
                .copied()
                .find(|(s, e)| s < e)
                .unwrap_or((start, end)),
        };
        // An optional group can capture nothing; a marker there would only garble.
        if s >= e {
            return None;
        }
        let secret = &text[s..e];
        if let Some(min) = self.entropy {
            if shannon_entropy(secret) <= min {
                return None;
            }
        }
        let line = || line_around(text, start, end).to_string();
        if self
            .allowlists
            .iter()
            .any(|a| a.allows(secret, whole, &line))
        {
            return None;
        }
        Some((s, e))
    }

    /// What to redact of an overflow finder's match `[start, end)` whose
    /// secret starts at `secret` (see `caps`): from there on, when the
    /// keyword condition holds. No entropy or
    /// allowlist: the finder has no groups to test them on, and a secret too
    /// long for the regex's caps errs toward being redacted.
    pub fn overflow_secret(
        &self,
        text: &str,
        start: usize,
        secret: usize,
        end: usize,
    ) -> Option<(usize, usize)> {
        self.keyword_holds(&text[start..end])
            .then_some((secret, end))
    }

    /// The keyword condition on a match: for [`KeywordScope::Near`] the
    /// scanner only runs the rule near its keywords, which is the condition.
    fn keyword_holds(&self, whole: &str) -> bool {
        !self.keyword_in_match
            || self.keywords.is_empty()
            || contains_keyword(whole.as_bytes(), &self.keywords)
    }

    /// Half the width of the window a keyword hit opens: the longest match
    /// plus the keyword context.
    pub fn reach(&self) -> usize {
        self.built().max_len + self.context
    }

    /// Whether the rule needs capture groups to find its secret.
    pub fn needs_groups(&self) -> bool {
        self.group != SecretGroup::Whole && self.built().error.is_none()
    }

    /// Whether the rule fails closed (its automaton could not be built): its
    /// matches then join into one redaction.
    pub fn fails_closed(&self) -> bool {
        self.built().error.is_some()
    }
}

/// Whether `haystack` contains one of `keywords` (lower-cased), ignoring ASCII case.
fn contains_keyword(haystack: &[u8], keywords: &[Box<[u8]>]) -> bool {
    keywords.iter().any(|k| {
        k.len() <= haystack.len() && haystack.windows(k.len()).any(|w| w.eq_ignore_ascii_case(k))
    })
}

//! Rule specs as policies and gitleaks files declare them, and their
//! compilation into bounded regexes with secret groups, entropy thresholds and
//! allowlists.
//!
//! Every compiled regex has a known longest match. That bound is what lets the
//! scanner run a rule only in a window around its keyword hits, and lets a
//! stream hold back a fixed amount of text: repetitions without an upper
//! bound (`+`, `*`, `{n,}`) are capped at compile time (see [`MAX_MATCH_LEN`]).

use std::sync::{Arc, OnceLock};

use regex_automata::meta;
use regex_syntax::hir::{Hir, HirKind};

use super::entropy::shannon_entropy;
use super::syntax::{ascii_ast, ascii_perl_classes};

/// The longest match any rule may have, in bytes. It bounds the window a rule
/// runs in around a keyword and the text a stream holds back.
pub const MAX_MATCH_LEN: usize = 4096;

/// What an unbounded repetition is capped at, tried in order until the whole
/// regex fits [`MAX_MATCH_LEN`] and its automaton the size limit. A secret
/// longer than the cap is redacted up to the cap.
const REPETITION_CAPS: &[u32] = &[256, 64, 16];

/// Rule regexes are written by people and loaded at runtime; this caps the
/// memory one rule can take, compiled and in the lazy DFA's cache.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Regex syntax errors can run to several lines; a diagnostic stays on one.
const MAX_ERROR_MESSAGE_LEN: usize = 200;

/// Which part of a match is the secret, replaced by `[REDACTED:id]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SecretGroup {
    /// The whole match.
    #[default]
    Whole,
    /// This capture group (1-based); the rest of the match stays as context.
    Index(usize),
    /// The first capture group that matched something, else the whole match
    /// (gitleaks' behaviour when `secretGroup` is not set).
    FirstNonEmpty,
}

impl From<usize> for SecretGroup {
    fn from(n: usize) -> Self {
        if n == 0 {
            SecretGroup::Whole
        } else {
            SecretGroup::Index(n)
        }
    }
}

/// What an allowlist's regexes are matched against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllowTarget {
    /// The secret (the capture group, or the whole match).
    #[default]
    Secret,
    /// The whole match, context included.
    Match,
}

/// Findings that are not secrets: a finding is dropped when the allowlist applies.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AllowlistSpec {
    /// Regexes (regex-crate syntax); one matching anywhere in the target applies.
    pub regexes: Vec<String>,
    /// Words; the secret containing one (ignoring ASCII case) applies.
    pub stopwords: Vec<String>,
    /// What `regexes` are matched against.
    pub target: AllowTarget,
    /// `true`: every kind of check given must apply (gitleaks `condition = "AND"`);
    /// `false`: any one of them.
    pub require_all: bool,
}

impl AllowlistSpec {
    /// Whether the allowlist compiles: its regexes (built, so a regex too
    /// large is an error too), its stopwords.
    pub fn check(&self) -> Result<(), String> {
        Allowlist::compile(self)?.build_now()
    }
}

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
}

/// Why a rule could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedactRuleError {
    /// Id of the offending rule, as written in the policy.
    pub id: String,
    /// What is wrong, phrased for the person who wrote the rule.
    pub message: String,
}

/// A regex after the checks: its HIR and the repetition caps that keep its
/// matches within [`MAX_MATCH_LEN`].
pub(super) struct Analyzed {
    hir: Hir,
    /// Index into [`REPETITION_CAPS`] of the largest cap that fits; `None`
    /// when the regex has no unbounded repetition to cap.
    cap: Option<usize>,
    /// Longest match under that cap: a bound on the built regex's longest
    /// match, known without building it.
    max_len: usize,
}

/// Parses and checks `pattern` without compiling it: syntax, empty matches,
/// the secret group, and the length bound. Cheap enough for every load.
pub(super) fn analyze(pattern: &str, group: SecretGroup) -> Result<Analyzed, String> {
    if pattern.is_empty() {
        return Err("regex is empty".to_string());
    }
    // The regex crate's own parser, with the ASCII classes put in between
    // parsing and translating (what `ascii_perl_classes` would print).
    let ast = ascii_ast(pattern).map_err(|e| format!("invalid regex: {e}"))?;
    let hir = regex_syntax::hir::translate::Translator::new()
        .translate(pattern, &ast)
        .map_err(|e| format!("invalid regex: {}", syntax_summary(&e.to_string())))?;
    let props = hir.properties();
    if props.minimum_len() == Some(0) {
        return Err("regex matches the empty string (it would redact everywhere)".to_string());
    }
    let groups = props.explicit_captures_len();
    if let SecretGroup::Index(n) = group {
        if n > groups {
            return Err(format!(
                "secret_group {n} does not exist: the regex has {groups} capture group{}",
                if groups == 1 { "" } else { "s" }
            ));
        }
    }
    let longest = match props.maximum_len() {
        // Bounded already (every built-in rule): nothing to cap.
        Some(n) if n <= MAX_MATCH_LEN => {
            return Ok(Analyzed {
                hir,
                cap: None,
                max_len: n,
            })
        }
        Some(n) => n,
        None => {
            for (cap, &limit) in REPETITION_CAPS.iter().enumerate() {
                let capped = cap_repetitions(hir.clone(), limit);
                if let Some(max_len) = capped
                    .properties()
                    .maximum_len()
                    .filter(|&n| n <= MAX_MATCH_LEN)
                {
                    return Ok(Analyzed {
                        hir,
                        cap: Some(cap),
                        max_len,
                    });
                }
            }
            cap_repetitions(hir, REPETITION_CAPS[REPETITION_CAPS.len() - 1])
                .properties()
                .maximum_len()
                .unwrap_or(usize::MAX)
        }
    };
    Err(format!(
        "regex is too large; simplify it (a match can be {longest} bytes long, the limit is {MAX_MATCH_LEN})"
    ))
}

/// Compiles an analyzed regex with the largest repetition cap whose automaton
/// fits the size limit; returns it with its longest match (at most
/// `analyzed.max_len`).
pub(super) fn build(analyzed: &Analyzed) -> Result<(meta::Regex, usize), String> {
    let too_large = "regex is too large; simplify it".to_string();
    let Some(first) = analyzed.cap else {
        return match build_hir(&analyzed.hir) {
            Ok(regex) => Ok((regex, analyzed.max_len)),
            Err(None) => Err(too_large),
            Err(Some(invalid)) => Err(invalid),
        };
    };
    for &limit in &REPETITION_CAPS[first..] {
        let capped = cap_repetitions(analyzed.hir.clone(), limit);
        let max_len = capped.properties().maximum_len().unwrap_or(usize::MAX);
        match build_hir(&capped) {
            Ok(regex) => return Ok((regex, max_len)),
            // A smaller cap makes a smaller automaton: `.{0,256}` is big.
            Err(None) => {}
            Err(Some(invalid)) => return Err(invalid),
        }
    }
    Err(too_large)
}

/// The automata for `hir`; `Err(None)` when they are over the size limit.
fn build_hir(hir: &Hir) -> Result<meta::Regex, Option<String>> {
    meta::Builder::new()
        .configure(
            meta::Config::new()
                .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                .dfa_size_limit(Some(REGEX_SIZE_LIMIT))
                .onepass_size_limit(Some(REGEX_SIZE_LIMIT))
                .hybrid_cache_capacity(REGEX_SIZE_LIMIT),
        )
        .build_from_hir(hir)
        .map_err(|e| {
            e.size_limit()
                .is_none()
                .then(|| format!("invalid regex: {}", syntax_summary(&e.to_string())))
        })
}

/// Rewrites `x*`, `x+` and `x{n,}` as `x{0,cap}`, `x{1,cap}` and `x{n,max(n,cap)}`.
fn cap_repetitions(hir: Hir, cap: u32) -> Hir {
    match hir.into_kind() {
        HirKind::Repetition(mut rep) => {
            rep.sub = Box::new(cap_repetitions(*rep.sub, cap));
            if rep.max.is_none() {
                rep.max = Some(rep.min.max(cap));
            }
            Hir::repetition(rep)
        }
        HirKind::Capture(mut c) => {
            c.sub = Box::new(cap_repetitions(*c.sub, cap));
            Hir::capture(c)
        }
        HirKind::Concat(subs) => {
            Hir::concat(subs.into_iter().map(|h| cap_repetitions(h, cap)).collect())
        }
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.into_iter().map(|h| cap_repetitions(h, cap)).collect())
        }
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(lit) => Hir::literal(lit.0),
        HirKind::Class(class) => Hir::class(class),
        HirKind::Look(look) => Hir::look(look),
    }
}

/// The regex crate prints the pattern with a caret under the error and the
/// reason on a line starting `error:`; a one-line diagnostic needs the reason.
pub(super) fn syntax_summary(detail: &str) -> String {
    let reason = detail
        .lines()
        .find_map(|line| line.trim().strip_prefix("error:"))
        .or_else(|| {
            detail
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with("regex parse error"))
        })
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

/// A checked allowlist. Its regexes are built the first time a finding
/// reaches it: most texts have no finding at all, and an imported gitleaks
/// config carries dozens of allowlist regexes (building them was 90% of the
/// first redaction with gitleaks' default config). Clones share the build.
#[derive(Clone)]
pub(super) struct Allowlist {
    /// The regexes, with ASCII `\d \w \s \b` made explicit.
    patterns: Arc<[String]>,
    /// Built on first use; `None` when one is over the size limit, and then
    /// the allowlist never applies (the finding stays redacted).
    regexes: Arc<OnceLock<Option<Vec<regex::Regex>>>>,
    stopwords: Vec<String>,
    target: AllowTarget,
    require_all: bool,
}

impl Allowlist {
    /// Checks the spec (regex syntax, stopwords) without building anything.
    pub(super) fn compile(spec: &AllowlistSpec) -> Result<Allowlist, String> {
        let mut patterns = Vec::new();
        for r in &spec.regexes {
            let ascii = ascii_perl_classes(r).map_err(|e| format!("allowlist regex `{r}`: {e}"))?;
            regex_syntax::ParserBuilder::new()
                .build()
                .parse(&ascii)
                .map_err(|e| {
                    format!("allowlist regex `{r}`: {}", syntax_summary(&e.to_string()))
                })?;
            patterns.push(ascii);
        }
        if spec.stopwords.iter().any(String::is_empty) {
            return Err("allowlist stopwords must not be empty strings".to_string());
        }
        Ok(Allowlist {
            patterns: patterns.into(),
            regexes: Arc::new(OnceLock::new()),
            stopwords: spec.stopwords.iter().map(|w| w.to_lowercase()).collect(),
            target: spec.target,
            require_all: spec.require_all,
        })
    }

    /// Builds the regexes now; the error names the one that is too large.
    pub(super) fn build_now(&self) -> Result<(), String> {
        if self.regexes().is_some() {
            return Ok(());
        }
        let too_large = self
            .patterns
            .iter()
            .find(|p| build_allow_regex(p).is_err())
            .map_or(String::new(), |p| p.clone());
        Err(format!(
            "allowlist regex `{too_large}` is too large; simplify it"
        ))
    }

    /// Whether the regexes have been built (or found unbuildable).
    #[cfg(test)]
    pub(super) fn is_built(&self) -> bool {
        self.regexes.get().is_some()
    }

    fn regexes(&self) -> Option<&[regex::Regex]> {
        self.regexes
            .get_or_init(|| {
                self.patterns
                    .iter()
                    .map(|p| build_allow_regex(p).ok())
                    .collect()
            })
            .as_deref()
    }

    /// Whether the finding is allowed (not a secret).
    fn allows(&self, secret: &str, whole: &str) -> bool {
        let target = match self.target {
            AllowTarget::Secret => secret,
            AllowTarget::Match => whole,
        };
        // An allowlist whose regexes cannot be built never applies.
        let regex_hit = || {
            self.regexes()
                .is_some_and(|regexes| regexes.iter().any(|r| r.is_match(target)))
        };
        let stop_hit = || {
            let lower = secret.to_lowercase();
            self.stopwords.iter().any(|w| lower.contains(w.as_str()))
        };
        let (has_regex, has_stop) = (!self.patterns.is_empty(), !self.stopwords.is_empty());
        if self.require_all {
            (has_regex || has_stop) && (!has_regex || regex_hit()) && (!has_stop || stop_hit())
        } else {
            (has_regex && regex_hit()) || (has_stop && stop_hit())
        }
    }
}

fn build_allow_regex(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
}

/// A block's body matchers.
pub(super) struct CompiledBlock {
    pub piece: meta::Regex,
    pub piece_max: usize,
    pub footer: meta::Regex,
    pub footer_max: usize,
}

/// What building a rule's regex gives: the automata, and how far its matches reach.
pub(super) struct Built {
    pub regex: meta::Regex,
    /// Longest match in bytes: the half-width of the window around a keyword.
    pub max_len: usize,
    pub block: Option<CompiledBlock>,
    /// Why the automaton could not be built, in which case `regex` is
    /// [`fail_closed_regex`] and every window of the rule is redacted whole.
    pub error: Option<String>,
}

/// One rule, checked and ready to run. Its automata are built the first
/// time a scan needs them (see [`CompiledRule::built`]): most texts wake few
/// rules, and building is most of what a rule costs.
pub(super) struct CompiledRule {
    pub id: String,
    /// Lower-cased; a match must contain one. Empty: the rule runs everywhere.
    pub keywords: Vec<Box<[u8]>>,
    pub group: SecretGroup,
    pub entropy: Option<f64>,
    pub allowlists: Vec<Allowlist>,
    /// The longest match the regex can have, known before it is built. The
    /// built regex's `max_len` is the same unless its automaton needed a
    /// smaller repetition cap; where it must not depend on whether the rule
    /// was built yet (a stream's hold-back), this is used.
    pub bound: usize,
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
    Ok(CompiledRule {
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
                block: None,
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
        let (regex, max_len) = build(&self.regex)?;
        let block = match &self.block {
            None => None,
            Some((piece, footer)) => {
                let (piece, piece_max) = build(piece)?;
                let (footer, footer_max) = build(footer)?;
                Some(CompiledBlock {
                    piece,
                    piece_max,
                    footer,
                    footer_max,
                })
            }
        };
        Ok(Built {
            regex,
            max_len,
            block,
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
        if !self.keywords.is_empty() && !contains_keyword(whole.as_bytes(), &self.keywords) {
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
        if self.allowlists.iter().any(|a| a.allows(secret, whole)) {
            return None;
        }
        Some((s, e))
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

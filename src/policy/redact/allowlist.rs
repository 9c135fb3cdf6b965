//! Allowlists: findings that are not secrets (a regex or stopword on the
//! secret, the whole match, or the match's line).

use std::sync::{Arc, OnceLock};

use super::bounded::{syntax_summary, REGEX_SIZE_LIMIT};
use super::syntax::ascii_perl_classes;

/// What an allowlist's regexes are matched against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllowTarget {
    /// The secret (the capture group, or the whole match).
    #[default]
    Secret,
    /// The whole match, context included.
    Match,
    /// The line the match is on (gitleaks' `regexTarget = "line"`), as far
    /// as [`LINE_CONTEXT`] bytes on either side of the match.
    Line,
}

/// How far a [`AllowTarget::Line`] allowlist looks for the ends of a match's
/// line, on each side: a stream has no bounded line otherwise.
pub const LINE_CONTEXT: usize = 512;

/// The line around `text[start..end]`, bounded by [`LINE_CONTEXT`].
pub(super) fn line_around(text: &str, start: usize, end: usize) -> &str {
    let mut lo = start.saturating_sub(LINE_CONTEXT);
    while !text.is_char_boundary(lo) {
        lo += 1;
    }
    let mut hi = end.saturating_add(LINE_CONTEXT).min(text.len());
    while !text.is_char_boundary(hi) {
        hi -= 1;
    }
    let from = text[lo..start].rfind('\n').map_or(lo, |i| lo + i + 1);
    let to = text[end..hi].find('\n').map_or(hi, |i| end + i);
    &text[from..to]
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
    pub(super) target: AllowTarget,
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
    pub(super) fn allows(&self, secret: &str, whole: &str, line: &dyn Fn() -> String) -> bool {
        let line_text;
        let target = match self.target {
            AllowTarget::Secret => secret,
            AllowTarget::Match => whole,
            AllowTarget::Line => {
                line_text = line();
                line_text.as_str()
            }
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

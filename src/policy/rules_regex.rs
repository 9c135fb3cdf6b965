//! A rule's regex, compiled at load or on first use.
//!
//! A hook process decides one call and exits, so compiling every rule's
//! regex at start is mostly wasted: a Bash call never reaches a rule on
//! `write`'s `content`. When the policy's exact text is already proven to
//! compile and to pass its examples under this build (see
//! [`crate::config::proven`]), rules keep their regex as text and compile it
//! the first time a call reaches it.
//!
//! Before compiling, such a regex asks its [`Prefilter`] (built on first
//! use too) whether the text holds the literals every match needs; when it
//! does not, the answer is "no match" without compiling — exact, see
//! [`super::rules_prefilter`].
//!
//! **Fail closed.** A proven regex cannot fail to compile later: the same
//! build compiled the same bytes. Should it happen anyway, the regex answers
//! "no match" and [`compile_failed`] turns true; the hook checks it after
//! deciding and refuses the call, so such a failure never decides.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use regex::Regex;

use super::rules_prefilter::Prefilter;

/// The largest regex a rule may compile to (bytes of compiled program):
/// policy files come from people, and a regex must not cost unbounded memory.
pub const MAX_REGEX_SIZE: usize = 1 << 20;

/// Compiles a policy regex, bounded by [`MAX_REGEX_SIZE`].
pub(super) fn build_regex(pattern: &str) -> Result<Regex, regex::Error> {
    regex::RegexBuilder::new(pattern)
        .size_limit(MAX_REGEX_SIZE)
        .dfa_size_limit(MAX_REGEX_SIZE)
        .build()
}

/// Set when a regex compiled on first use failed to compile.
static FAILED: AtomicBool = AtomicBool::new(false);

/// Whether some regex compiled on first use, in this process, failed to
/// compile (so a decision that read it must not stand).
pub fn compile_failed() -> bool {
    FAILED.load(Ordering::SeqCst)
}

/// A policy regex: compiled, or its text and a slot for the compiled form.
#[derive(Clone, Debug)]
pub struct PolicyRegex {
    pattern: String,
    compiled: OnceLock<Option<Regex>>,
    prefilter: OnceLock<Prefilter>,
}

impl PolicyRegex {
    /// An already compiled regex.
    pub fn compiled(regex: Regex) -> Self {
        let compiled = OnceLock::new();
        let pattern = regex.as_str().to_string();
        let _ = compiled.set(Some(regex));
        PolicyRegex {
            pattern,
            compiled,
            prefilter: OnceLock::new(),
        }
    }

    /// A regex compiled the first time it is matched.
    pub fn on_first_use(pattern: &str) -> Self {
        PolicyRegex {
            pattern: pattern.to_string(),
            compiled: OnceLock::new(),
            prefilter: OnceLock::new(),
        }
    }

    /// The regex as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether it has been compiled (at load, or by a match since).
    pub fn is_compiled(&self) -> bool {
        self.compiled.get().is_some()
    }

    /// Whether `text` contains a match. A regex not compiled yet is compiled
    /// only when its prefilter finds the literals a match needs. A regex that fails to compile here
    /// matches nothing and sets [`compile_failed`].
    pub fn is_match(&self, text: &str) -> bool {
        if self.compiled.get().is_none()
            && !self
                .prefilter
                .get_or_init(|| Prefilter::new(&self.pattern))
                .may_match(text)
        {
            return false;
        }
        let regex = self.compiled.get_or_init(|| {
            let built = build_regex(&self.pattern).ok();
            if built.is_none() {
                FAILED.store(true, Ordering::SeqCst);
            }
            built
        });
        regex.as_ref().is_some_and(|r| r.is_match(text))
    }
}

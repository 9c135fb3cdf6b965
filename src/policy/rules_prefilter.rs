//! A required-literal prefilter for rule regexes compiled on first use.
//!
//! Compiling a rule's regex is most of what a hook process with a team's
//! policy spends (a `(?i)` regex with Unicode `\b`, `\w`, `\s` costs millions
//! of instructions), yet most calls cannot match most rules: `ls -la` holds
//! none of `psql`, `mysql`, `token`, `kubectl`. Before compiling, a
//! [`PolicyRegex`](super::rules_regex::PolicyRegex) asks a [`Prefilter`]
//! whether the text holds the literals every match needs; when it does not,
//! the regex cannot match and is not compiled.
//!
//! **Sound by construction.** Skipping is exact: the answer "cannot match" is
//! given only when a match is impossible; every doubt answers "may match",
//! and the regex is compiled and run as before. The literals come from the
//! pattern's syntax tree alone (no translation: no Unicode tables, no case
//! folding tables), read so that they hold on ASCII text only:
//! - the text must be ASCII, or the answer is "may match" (under `(?i)` a
//!   Unicode `ſ` matches `s` and the Kelvin sign `K` matches `k`);
//! - the pattern must be ASCII and write no code point or Unicode class
//!   (`\x`, `\u`, `\U`, `\p`, `\P`), or there is no prefilter (`(?i)ſ`
//!   matches `s`; a pattern such as `[\x{100}-\x{200}]` holds `ſ`);
//! - every letter is searched in either ASCII case, whatever the flags say
//!   (a case-sensitive letter so accepts more than it matches: never less),
//!   so no flag (`(?i)`, `(?-i)`, scoped or not) has to be followed.
//!
//! In that tree, a run of literal characters in a concatenation (looking
//! through zero-width assertions and flag settings) is required; a
//! repetition of at least one requires what its body requires; a group what
//! its body requires; an alternation one of its branches' best literals.
//! Classes, `.` and everything else require nothing. A match holds each
//! required literal, so a text missing one of them holds no match.

use memchr::{memchr2_iter, memchr_iter, memmem};
use regex_syntax::ast::{Ast, RepetitionKind, RepetitionRange};

/// One byte of a required literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Atom {
    /// Exactly this byte.
    Byte(u8),
    /// This ASCII letter (lowercase) in either case.
    Fold(u8),
}

/// A required literal: the text holds these bytes, adjacent.
type Needle = Vec<Atom>;

/// What the prefilter knows of a pattern: every match holds, for each entry,
/// one of its needles. Empty: nothing known, every text may match.
#[derive(Clone, Debug, Default)]
pub(super) struct Prefilter {
    required: Vec<Vec<Needle>>,
}

/// More needles than this in one alternative set are not worth searching.
const MAX_NEEDLES: usize = 64;

impl Prefilter {
    /// The prefilter of `pattern` (a regex of a policy file, written for
    /// `regex` with its default syntax settings).
    pub(super) fn new(pattern: &str) -> Self {
        if !pattern.is_ascii()
            || ["\\x", "\\u", "\\U", "\\p", "\\P"]
                .iter()
                .any(|s| pattern.contains(s))
        {
            return Prefilter::default();
        }
        // The syntax as `regex` reads it by default (no octal, nesting 250).
        let Ok(ast) = regex_syntax::ast::parse::Parser::new().parse(pattern) else {
            return Prefilter::default();
        };
        let required = required(&ast)
            .into_iter()
            .filter(|set| set.len() <= MAX_NEEDLES && set.iter().all(|n| !n.is_empty()))
            .collect();
        Prefilter { required }
    }

    /// Whether the pattern knows no required literal (so it filters nothing).
    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.required.is_empty()
    }

    /// False only when no match of the pattern can be in `text`.
    pub(super) fn may_match(&self, text: &str) -> bool {
        if self.required.is_empty() || !text.is_ascii() {
            return true;
        }
        let hay = text.as_bytes();
        self.required
            .iter()
            .all(|set| set.iter().any(|needle| contains(hay, needle)))
    }
}

/// Whether `hay` holds `needle` (case-insensitive letters in either case).
fn contains(hay: &[u8], needle: &[Atom]) -> bool {
    if needle.iter().all(|a| matches!(a, Atom::Byte(_))) {
        let bytes: Vec<u8> = needle
            .iter()
            .map(|a| match a {
                Atom::Byte(b) | Atom::Fold(b) => *b,
            })
            .collect();
        return memmem::find(hay, &bytes).is_some();
    }
    let fits = |at: usize| {
        hay.len() - at >= needle.len()
            && needle.iter().zip(&hay[at..]).all(|(a, h)| match a {
                Atom::Byte(b) => b == h,
                Atom::Fold(b) => *b == h.to_ascii_lowercase(),
            })
    };
    match needle[0] {
        Atom::Byte(b) => memchr_iter(b, hay).any(fits),
        Atom::Fold(b) => memchr2_iter(b, b.to_ascii_uppercase(), hay).any(fits),
    }
}

/// What every match of `ast` holds: for each entry, one of its needles.
fn required(ast: &Ast) -> Vec<Vec<Needle>> {
    match ast {
        Ast::Literal(_) => atoms(ast).map(|run| vec![vec![run]]).unwrap_or_default(),
        Ast::Repetition(rep) if at_least_once(&rep.op.kind) => required(&rep.ast),
        Ast::Group(group) => required(&group.ast),
        Ast::Concat(concat) => {
            let mut out = Vec::new();
            let mut run: Needle = Vec::new();
            for sub in &concat.asts {
                match atoms(sub) {
                    // Zero-width items do not break a run: they consume nothing.
                    Some(more) => run.extend(more),
                    None => {
                        if !run.is_empty() {
                            out.push(vec![std::mem::take(&mut run)]);
                        }
                        out.extend(required(sub));
                    }
                }
            }
            if !run.is_empty() {
                out.push(vec![run]);
            }
            out
        }
        Ast::Alternation(alt) => {
            let mut any = Vec::new();
            for branch in &alt.asts {
                match best(required(branch)) {
                    Some(set) => any.extend(set),
                    None => return vec![],
                }
            }
            vec![any]
        }
        _ => vec![],
    }
}

/// Whether a repetition matches its body at least once.
fn at_least_once(kind: &RepetitionKind) -> bool {
    match kind {
        RepetitionKind::ZeroOrOne | RepetitionKind::ZeroOrMore => false,
        RepetitionKind::OneOrMore => true,
        RepetitionKind::Range(
            RepetitionRange::Exactly(n)
            | RepetitionRange::AtLeast(n)
            | RepetitionRange::Bounded(n, _),
        ) => *n >= 1,
    }
}

/// The bytes `ast` matches when it is one literal character (a letter in
/// either case) or zero-width (none); `None` for anything else.
fn atoms(ast: &Ast) -> Option<Needle> {
    match ast {
        Ast::Empty(_) | Ast::Flags(_) | Ast::Assertion(_) => Some(vec![]),
        Ast::Literal(lit) if lit.c.is_ascii() => {
            let b = lit.c as u8;
            Some(vec![if b.is_ascii_alphabetic() {
                Atom::Fold(b.to_ascii_lowercase())
            } else {
                Atom::Byte(b)
            }])
        }
        _ => None,
    }
}

/// Of several requirements (all hold), the one that filters best: the
/// longest shortest needle, then the fewest needles.
fn best(all: Vec<Vec<Needle>>) -> Option<Vec<Needle>> {
    all.into_iter()
        .filter(|set| !set.is_empty() && set.iter().all(|n| !n.is_empty()))
        .max_by_key(|set| {
            let shortest = set.iter().map(Vec::len).min().unwrap_or(0);
            (shortest, std::cmp::Reverse(set.len()))
        })
}

#[cfg(test)]
#[path = "rules_prefilter_tests.rs"]
mod tests;

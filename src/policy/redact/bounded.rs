//! Rule regexes made bounded: parsed and checked ([`analyze`]), then built
//! under per-repetition caps with their overflow ([`build`]; see `caps`).

use regex_automata::meta;
use regex_syntax::hir::Hir;

use super::caps;
pub use super::caps::MAX_MATCH_LEN;
use super::syntax::ascii_ast;

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

/// A block's body matchers.
pub(super) struct CompiledBlock {
    pub piece: meta::Regex,
    pub piece_max: usize,
    pub footer: meta::Regex,
    pub footer_max: usize,
    /// `true`: the footer is tried before each piece and ends the block (a
    /// private key's END line); `false`: pieces go on while they match, then
    /// the footer is tried once and taken if it matches.
    pub footer_first: bool,
}

/// Rule regexes are written by people and loaded at runtime; this caps the
/// memory one rule can take, compiled and in the lazy DFA's cache.
pub(super) const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Regex syntax errors can run to several lines; a diagnostic stays on one.
const MAX_ERROR_MESSAGE_LEN: usize = 200;

/// A regex after the checks: its HIR and the repetition caps that keep its
/// matches within [`MAX_MATCH_LEN`].
pub(super) struct Analyzed {
    hir: Hir,
    /// Each unbounded repetition's minimum and the extra it may take beyond
    /// it (pre-order; see `caps`); empty when there is nothing to cap.
    caps: Vec<(u32, u32)>,
    /// Longest match under those caps: a bound on the built regex's longest
    /// match, known without building it.
    pub(super) max_len: usize,
}

impl Analyzed {
    /// The byte classes every match begins with (see `prefix`); empty for a
    /// regex with capped repetitions, whose overflow finder has matches of
    /// its own.
    pub(super) fn class_prefix(&self) -> Vec<super::prefix::ByteSet> {
        if self.caps.is_empty() {
            super::prefix::class_prefix(&self.hir)
        } else {
            Vec::new()
        }
    }

    fn capped(&self, extras: &[u32]) -> (Hir, Vec<u32>) {
        let caps: Vec<u32> = self
            .caps
            .iter()
            .zip(extras)
            .map(|(&(min, _), &e)| min.saturating_add(e))
            .collect();
        (caps::cap(&self.hir, &caps, &mut 0), caps)
    }
}

/// Halves the largest extras (down to [`caps::LEAST_EXTRA`]); `false` when
/// none is left to lower.
fn lower(extras: &mut [u32]) -> bool {
    // The largest first: a long context cap gives way before a secret's.
    let Some(&top) = extras.iter().max().filter(|&&m| m > caps::LEAST_EXTRA) else {
        return false;
    };
    for e in extras.iter_mut().filter(|e| **e == top) {
        *e = (*e / 2).max(caps::LEAST_EXTRA);
    }
    true
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
                caps: Vec::new(),
                max_len: n,
            })
        }
        Some(n) => n,
        None => {
            let hir = caps::bytewise(&hir);
            let mut mins = Vec::new();
            caps::unbounded(&hir, &mut mins);
            let mut extras = vec![caps::FIRST_EXTRA; mins.len()];
            let mut analyzed = Analyzed {
                hir,
                caps: mins.iter().zip(&extras).map(|(&m, &e)| (m, e)).collect(),
                max_len: 0,
            };
            loop {
                let max = analyzed.capped(&extras).0.properties().maximum_len();
                match max {
                    Some(n) if n <= MAX_MATCH_LEN => {
                        for (c, e) in analyzed.caps.iter_mut().zip(&extras) {
                            c.1 = *e;
                        }
                        analyzed.max_len = n;
                        return Ok(analyzed);
                    }
                    _ if lower(&mut extras) => {}
                    n => break n.unwrap_or(usize::MAX),
                }
            }
        }
    };
    Err(format!(
        "regex is too large; simplify it (a match can be {longest} bytes long, the limit is {MAX_MATCH_LEN})"
    ))
}

/// A regex built under its caps.
pub(super) struct Capped {
    pub regex: meta::Regex,
    /// Its longest match.
    pub max_len: usize,
    /// Its shortest match: a span with fewer bytes holds none (the regex
    /// would say so itself, after setting up a search).
    pub min_len: usize,
    /// How a match of a secret that reached a cap goes on.
    pub overflow: Option<Overflow>,
    /// The smallest cap of a repetition outside the secret: a match that
    /// needs more context than that is missed (`check` says so).
    pub context_cap: Option<u32>,
}

/// A capped regex's overflow, built (see `caps`).
pub(super) struct Overflow {
    /// Finds a match's prefix that reached a cap.
    pub finder: meta::Regex,
    /// The finder's longest match.
    pub max_len: usize,
    /// How the secret goes on from there.
    pub block: CompiledBlock,
    /// Bytes, and how many of them in a row, a finder's match needs: where
    /// no such run is, the finder is not run (most windows).
    pub run: (Box<[bool; 256]>, usize),
}

/// Compiles an analyzed regex with the largest repetition caps whose
/// automaton fits the size limit; returns it with its longest match (at most
/// `analyzed.max_len`) and, for a capped regex, its overflow.
pub(super) fn build(analyzed: &Analyzed) -> Result<Capped, String> {
    let too_large = "regex is too large; simplify it".to_string();
    if analyzed.caps.is_empty() {
        return match build_hir(&analyzed.hir) {
            Ok(regex) => Ok(Capped {
                regex,
                max_len: analyzed.max_len,
                min_len: analyzed.hir.properties().minimum_len().unwrap_or(0),
                overflow: None,
                context_cap: None,
            }),
            Err(None) => Err(too_large),
            Err(Some(invalid)) => Err(invalid),
        };
    }
    let mut extras: Vec<u32> = analyzed.caps.iter().map(|c| c.1).collect();
    loop {
        let (capped, caps) = analyzed.capped(&extras);
        let max_len = capped.properties().maximum_len().unwrap_or(usize::MAX);
        let built = build_hir(&capped).and_then(|regex| {
            let Some(o) = caps::overflow(&analyzed.hir, &caps) else {
                return Ok((regex, None));
            };
            let block = CompiledBlock {
                piece_max: o.piece.properties().maximum_len().unwrap_or(usize::MAX),
                piece: build_hir(&o.piece)?,
                footer_max: o.footer.properties().maximum_len().unwrap_or(0),
                footer: build_hir(&o.footer)?,
                footer_first: o.footer_first,
            };
            Ok((
                regex,
                Some(Overflow {
                    max_len: o.finder.properties().maximum_len().unwrap_or(usize::MAX),
                    finder: build_hir(&o.finder)?,
                    block,
                    run: o.run,
                }),
            ))
        });
        match built {
            Ok((regex, overflow)) => {
                return Ok(Capped {
                    regex,
                    max_len,
                    min_len: capped.properties().minimum_len().unwrap_or(0),
                    overflow,
                    context_cap: caps::context_caps(&analyzed.hir, &caps).into_iter().min(),
                })
            }
            // Smaller caps make smaller automata.
            Err(None) if lower(&mut extras) => {}
            Err(None) => return Err(too_large),
            Err(Some(invalid)) => return Err(invalid),
        }
    }
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

//! Unbounded repetitions (`+`, `*`, `{n,}`) made bounded without losing the
//! tail of a long secret.
//!
//! The scanner needs every regex to have a longest match (it runs a rule in a
//! window around its keywords, and a stream holds back that much text), so
//! each unbounded repetition gets a cap, chosen per repetition: its minimum
//! plus [`FIRST_EXTRA`], lowered only as far as the whole regex needs to fit
//! [`MAX_MATCH_LEN`](super::MAX_MATCH_LEN) and the automaton size limit. A cap
//! alone would change what a rule means: `ey…{17,}\.` stops matching a JWT
//! whose payload is longer than the cap, and `ops_eyJ…{250,}` redacts a
//! token's first few hundred characters and leaves the rest. So a capped rule
//! also gets an *overflow*:
//!
//! - a finder: every prefix of a match that ends with some capped repetition
//!   having reached its cap. Where it matches (no later than the rule's own
//!   match), the secret is taken to go on, whatever follows: erring toward
//!   redacting more;
//! - a continuation that keeps matching with the same repetition (piece by
//!   piece, so a secret of any length streams in constant memory), then takes
//!   what the regex has after that repetition (up to the end of its capture
//!   group) if it follows. For lazy repetitions (`[\s\S]{64,}?KEY-----`) that
//!   suffix is looked for before each piece, so the block ends at the first
//!   `KEY-----` as the regex would.
//!
//! `.` and `[\s\S]` become byte classes when a regex has caps: as Unicode
//! classes they compile to large UTF-8 automata that forced tiny caps. A match
//! may then end inside a character; the scanner widens it to the character's
//! end (more is redacted, never less).

use regex_syntax::hir::{Capture, Class, ClassBytes, ClassBytesRange, Hir, HirKind, Repetition};

/// The longest match any rule may have, in bytes. It bounds the window a rule
/// runs in around a keyword and the text a stream holds back.
pub const MAX_MATCH_LEN: usize = 4096;

/// How many repetitions beyond its minimum an unbounded repetition may take
/// at first; the largest are halved while the regex is too large. Inside the
/// secret the overflow takes over past it, so it need not be large; around
/// the secret (`curl\b.*` before `-u`) a longer match is missed, and `check`
/// says so. Larger caps there would widen every window of the rule (with a
/// common keyword such as `secret`, most of a text).
pub(super) const FIRST_EXTRA: u32 = 256;

/// The least extra a cap is lowered to; below that the regex is too large.
pub(super) const LEAST_EXTRA: u32 = 16;

/// Repetitions one piece of an overflow continuation takes at most.
const PIECE_REPS: u32 = 256;

/// The unbounded repetitions' minimums, in pre-order (the order [`cap`] uses).
pub(super) fn unbounded(hir: &Hir, out: &mut Vec<u32>) {
    match hir.kind() {
        HirKind::Repetition(rep) => {
            if rep.max.is_none() {
                out.push(rep.min);
            }
            unbounded(&rep.sub, out);
        }
        HirKind::Capture(c) => unbounded(&c.sub, out),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => {
            subs.iter().for_each(|s| unbounded(s, out))
        }
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => {}
    }
}

fn count(hir: &Hir) -> usize {
    let mut v = Vec::new();
    unbounded(hir, &mut v);
    v.len()
}

/// `hir` with its `i`-th unbounded repetition (from `*next` on, pre-order)
/// capped at `max(min, caps[i])`.
pub(super) fn cap(hir: &Hir, caps: &[u32], next: &mut usize) -> Hir {
    match hir.kind() {
        HirKind::Repetition(rep) => {
            let mut rep = rep.clone();
            if rep.max.is_none() {
                let c = caps.get(*next).copied().unwrap_or(rep.min);
                *next += 1;
                rep.max = Some(rep.min.max(c));
            }
            rep.sub = Box::new(cap(&rep.sub, caps, next));
            Hir::repetition(rep)
        }
        HirKind::Capture(c) => {
            let mut c = c.clone();
            c.sub = Box::new(cap(&c.sub, caps, next));
            Hir::capture(c)
        }
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(|h| cap(h, caps, next)).collect()),
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.iter().map(|h| cap(h, caps, next)).collect())
        }
        _ => hir.clone(),
    }
}

/// `hir` with every class that takes any non-ASCII character (`.`, `[\s\S]`,
/// `[^"]`) turned into a byte class: same ASCII, any byte above it. Small
/// automata for large repetitions of "anything"; see the module docs for the
/// consequence on match boundaries.
pub(super) fn bytewise(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Class(Class::Unicode(u)) => {
            let all_non_ascii = u
                .ranges()
                .iter()
                .any(|r| r.start() <= '\u{80}' && r.end() == '\u{10FFFF}');
            if !all_non_ascii {
                return hir.clone();
            }
            let mut ranges: Vec<ClassBytesRange> = u
                .ranges()
                .iter()
                .filter(|r| (r.start() as u32) < 0x80)
                .map(|r| ClassBytesRange::new(r.start() as u8, (r.end() as u32).min(0x7f) as u8))
                .collect();
            ranges.push(ClassBytesRange::new(0x80, 0xff));
            Hir::class(Class::Bytes(ClassBytes::new(ranges)))
        }
        HirKind::Repetition(rep) => {
            let mut rep = rep.clone();
            rep.sub = Box::new(bytewise(&rep.sub));
            Hir::repetition(rep)
        }
        HirKind::Capture(c) => {
            let mut c = c.clone();
            c.sub = Box::new(bytewise(&c.sub));
            Hir::capture(c)
        }
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(bytewise).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(bytewise).collect()),
        _ => hir.clone(),
    }
}

/// `hir` without capture groups (the overflow regexes are separate automata;
/// their groups would mean nothing).
fn strip(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Capture(c) => strip(&c.sub),
        HirKind::Repetition(rep) => {
            let mut rep = rep.clone();
            rep.sub = Box::new(strip(&rep.sub));
            Hir::repetition(rep)
        }
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(strip).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(strip).collect()),
        _ => hir.clone(),
    }
}

/// The regexes of a capped rule's overflow (see the module docs), as HIR.
pub(super) struct OverflowHir {
    /// Prefixes of a match that end with a capped repetition at its cap;
    /// with group 1 around the secret's part when the regex has one group.
    pub finder: Hir,
    /// One piece of the continuation: the capped repetitions' bodies, repeated.
    pub piece: Hir,
    /// What ends the continuation: lazy, the body up to the suffix; greedy,
    /// the suffix alone (tried once, after the last piece).
    pub footer: Hir,
    /// Whether `footer` is tried before each piece (lazy repetitions).
    pub footer_first: bool,
    /// A cheap necessary condition for `finder` to match: a run of at least
    /// `run.1` bytes, each one of `run.0`'s (a repetition at its cap).
    pub run: (Box<[bool; 256]>, usize),
}

/// The bytes a match of `hir` can contain.
fn bytes_of(hir: &Hir, set: &mut [bool; 256]) {
    match hir.kind() {
        HirKind::Literal(l) => l.0.iter().for_each(|&b| set[b as usize] = true),
        HirKind::Class(Class::Unicode(u)) => {
            for r in u.ranges() {
                for c in (r.start() as u32)..=(r.end() as u32).min(0x7f) {
                    set[c as usize] = true;
                }
                if r.end() as u32 > 0x7f {
                    set[0x80..].iter_mut().for_each(|b| *b = true);
                }
            }
        }
        HirKind::Class(Class::Bytes(b)) => {
            for r in b.ranges() {
                for c in r.start()..=r.end() {
                    set[c as usize] = true;
                }
            }
        }
        HirKind::Repetition(rep) => bytes_of(&rep.sub, set),
        HirKind::Capture(c) => bytes_of(&c.sub, set),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => {
            subs.iter().for_each(|s| bytes_of(s, set))
        }
        HirKind::Empty | HirKind::Look(_) => {}
    }
}

/// Whether `text` has a run of at least `len` bytes from `set`.
///
/// Looks at every `len`-th byte only: a run that long covers one of them,
/// and from there it is measured both ways. Code has short runs of token
/// characters, so this costs about `text.len() / len` lookups.
pub(super) fn has_run(text: &[u8], set: &[bool; 256], len: usize) -> bool {
    if len <= 1 {
        return text.iter().any(|&b| set[b as usize]) || len == 0;
    }
    let member = |i: usize| set[text[i] as usize];
    let mut p = len - 1;
    while p < text.len() {
        if !member(p) {
            p += len;
            continue;
        }
        let mut lo = p;
        while lo > 0 && member(lo - 1) && p + 1 - lo < len {
            lo -= 1;
        }
        let mut hi = p + 1;
        while hi < text.len() && member(hi) && hi - lo < len {
            hi += 1;
        }
        if hi - lo >= len {
            return true;
        }
        // The run ends before `hi`; any later one starts after it.
        p = hi + len;
    }
    false
}

/// The overflow of `hir` (already [`bytewise`]) under `caps`; `None` when it
/// has no unbounded repetition.
///
/// Only repetitions inside the secret count: inside a capture group when the
/// regex has any (gitleaks' secret is a group), else anywhere. A capped
/// repetition of context (`curl\b.*-u`) reaching its cap says nothing about
/// a secret; such a match is missed instead ([`context_caps`] reports it).
pub(super) fn overflow(hir: &Hir, caps: &[u32]) -> Option<OverflowHir> {
    let whole = hir.properties().explicit_captures_len() == 0;
    let groups = hir.properties().explicit_captures_len();
    let finder = finder(hir, 0, caps, whole, groups == 1)?;
    let mut found = Vec::new();
    suffixes(hir, 0, caps, &Hir::empty(), whole, &mut found);
    let bodies: Vec<Hir> = found.iter().map(|f| f.body.clone()).collect();
    let body = Hir::alternation(bodies);
    let body_max = body
        .properties()
        .maximum_len()
        .unwrap_or(MAX_MATCH_LEN)
        .max(1);
    let reps = (MAX_MATCH_LEN / body_max).clamp(1, PIECE_REPS as usize) as u32;
    let piece = Hir::repetition(Repetition {
        min: 1,
        max: Some(reps),
        greedy: true,
        sub: Box::new(body.clone()),
    });
    let suffixes: Vec<Hir> = found
        .iter()
        .map(|f| f.suffix.clone())
        .filter(|s| s.properties().maximum_len() != Some(0))
        .collect();
    let lazy = found.iter().all(|f| !f.greedy) && !suffixes.is_empty();
    let suffix = if suffixes.is_empty() {
        Hir::fail()
    } else {
        Hir::alternation(suffixes)
    };
    let footer = if lazy {
        Hir::concat(vec![
            Hir::repetition(Repetition {
                min: 0,
                max: Some(reps),
                greedy: false,
                sub: Box::new(body),
            }),
            suffix,
        ])
    } else {
        suffix
    };
    let mut set = Box::new([false; 256]);
    for f in &found {
        bytes_of(&f.body, &mut set);
    }
    let run = found
        .iter()
        .map(|f| f.cap as usize * f.body.properties().minimum_len().unwrap_or(0))
        .min()
        .unwrap_or(0);
    Some(OverflowHir {
        finder,
        piece,
        footer,
        footer_first: lazy,
        run: (set, run),
    })
}

/// Every prefix of a match of `hir` that ends with one of its unbounded
/// repetitions (numbered from `first`) at exactly its cap; captures stripped.
fn finder(hir: &Hir, first: usize, caps: &[u32], secret: bool, single_group: bool) -> Option<Hir> {
    match hir.kind() {
        HirKind::Repetition(rep) => {
            let (own, inner_first) = if rep.max.is_none() {
                (secret.then_some(first), first + 1)
            } else {
                (None, first)
            };
            let mut next = inner_first;
            let body = strip(&cap(&rep.sub, caps, &mut next));
            let at_cap = |n: u32| {
                Hir::repetition(Repetition {
                    min: n,
                    max: Some(n),
                    greedy: true,
                    sub: Box::new(body.clone()),
                })
            };
            let mut alts = Vec::new();
            let limit = match (rep.max, caps.get(first)) {
                (None, Some(&c)) => rep.min.max(c),
                (max, _) => max.unwrap_or(rep.min),
            };
            if own.is_some() {
                alts.push(at_cap(limit));
            }
            if let Some(inner) = finder(&rep.sub, inner_first, caps, secret, single_group) {
                alts.push(Hir::concat(vec![
                    Hir::repetition(Repetition {
                        min: 0,
                        max: Some(limit.saturating_sub(1)),
                        greedy: true,
                        sub: Box::new(body.clone()),
                    }),
                    inner,
                ]));
            }
            (!alts.is_empty()).then(|| Hir::alternation(alts))
        }
        // With one group (the secret), the finder keeps it, so the context
        // before the secret is not redacted with it. It then occurs in one
        // alternative only: the other prefixes are stripped.
        HirKind::Capture(c) => {
            let f = finder(&c.sub, first, caps, true, single_group)?;
            Some(if single_group {
                Hir::capture(Capture {
                    index: 1,
                    name: None,
                    sub: Box::new(f),
                })
            } else {
                f
            })
        }
        HirKind::Concat(subs) => {
            let mut alts = Vec::new();
            let mut prefix = Vec::new();
            let mut at = first;
            for sub in subs {
                if let Some(f) = finder(sub, at, caps, secret, single_group) {
                    let mut parts = prefix.clone();
                    parts.push(f);
                    alts.push(Hir::concat(parts));
                }
                let mut next = at;
                prefix.push(strip(&cap(sub, caps, &mut next)));
                at = next;
            }
            (!alts.is_empty()).then(|| Hir::alternation(alts))
        }
        HirKind::Alternation(subs) => {
            let mut alts = Vec::new();
            let mut at = first;
            for sub in subs {
                if let Some(f) = finder(sub, at, caps, secret, single_group) {
                    alts.push(f);
                }
                at += count(sub);
            }
            (!alts.is_empty()).then(|| Hir::alternation(alts))
        }
        _ => None,
    }
}

/// A capped repetition's body, what follows it, and its greediness.
struct Found {
    body: Hir,
    suffix: Hir,
    greedy: bool,
    /// The repetition's cap.
    cap: u32,
}

/// For each unbounded repetition in `hir` (numbered from `first`): its body
/// and what follows it up to the end of the innermost capture group around
/// it (`after` is what follows `hir` itself in that scope); captures stripped.
fn suffixes(
    hir: &Hir,
    first: usize,
    caps: &[u32],
    after: &Hir,
    secret: bool,
    out: &mut Vec<Found>,
) {
    match hir.kind() {
        HirKind::Repetition(rep) => {
            let inner_first = first + usize::from(rep.max.is_none());
            if rep.max.is_none() && secret {
                let mut next = inner_first;
                out.push(Found {
                    body: strip(&cap(&rep.sub, caps, &mut next)),
                    suffix: after.clone(),
                    greedy: rep.greedy,
                    cap: caps.get(first).map_or(rep.min, |&c| rep.min.max(c)),
                });
            }
            suffixes(&rep.sub, inner_first, caps, after, secret, out);
        }
        HirKind::Capture(c) => suffixes(&c.sub, first, caps, &Hir::empty(), true, out),
        HirKind::Concat(subs) => {
            let mut at = first;
            for (i, sub) in subs.iter().enumerate() {
                let mut next = at + count(sub);
                let start = next;
                let mut rest: Vec<Hir> = subs[i + 1..]
                    .iter()
                    .map(|s| strip(&cap(s, caps, &mut next)))
                    .collect();
                rest.push(after.clone());
                suffixes(sub, at, caps, &Hir::concat(rest), secret, out);
                at = start;
            }
        }
        HirKind::Alternation(subs) => {
            let mut at = first;
            for sub in subs {
                suffixes(sub, at, caps, after, secret, out);
                at += count(sub);
            }
        }
        _ => {}
    }
}

/// For each unbounded repetition (pre-order): whether it is inside the
/// secret (see [`overflow`]).
pub(super) fn in_secret(hir: &Hir) -> Vec<bool> {
    fn walk(hir: &Hir, secret: bool, out: &mut Vec<bool>) {
        match hir.kind() {
            HirKind::Repetition(rep) => {
                if rep.max.is_none() {
                    out.push(secret);
                }
                walk(&rep.sub, secret, out);
            }
            HirKind::Capture(c) => walk(&c.sub, true, out),
            HirKind::Concat(subs) | HirKind::Alternation(subs) => {
                subs.iter().for_each(|s| walk(s, secret, out))
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(hir, hir.properties().explicit_captures_len() == 0, &mut out);
    out
}

/// The caps of unbounded repetitions outside the secret (see [`overflow`]),
/// in pre-order: a match needing more of them is missed.
pub(super) fn context_caps(hir: &Hir, caps: &[u32]) -> Vec<u32> {
    in_secret(hir)
        .into_iter()
        .zip(caps)
        .filter(|(secret, _)| !secret)
        .map(|(_, &c)| c)
        .collect()
}

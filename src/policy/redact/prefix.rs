//! Where a rule without keywords can match: the byte classes every match of
//! its regex begins with, read off the regex's syntax tree.
//!
//! A rule with keywords runs only near them; one without (a Twilio key,
//! `SK` and 32 hex digits; a Discord bot token) used to run its regex over
//! all text. Most such formats still begin with a fixed run of byte classes
//! (`S`, `K`, a hex digit, …): [`class_prefix`] finds that run, and the
//! keyword prefilter reports the positions where it occurs, so the rule runs
//! in windows around them like a rule with keywords.
//!
//! Sound by construction: for every match `m` of the regex and every `i`
//! below the prefix's length, `m` is longer than `i` bytes and its byte `i`
//! is in class `i`. So a position where the classes do not occur starts no
//! match, and skipping it changes nothing. The derivation only ever takes a
//! superset where it is unsure (a non-ASCII class allows every leading byte
//! and ends the prefix), and stops at the first element whose width varies.

use regex_syntax::hir::{Class, Hir, HirKind};

/// The longest prefix derived: more classes would rarely drop more
/// positions, and the prefilter must see this many bytes past a position.
pub(super) const MAX_PREFIX: usize = 16;

/// A set of byte values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct ByteSet([u64; 4]);

impl ByteSet {
    /// No byte.
    pub const EMPTY: ByteSet = ByteSet([0; 4]);
    /// Every byte.
    pub const ALL: ByteSet = ByteSet([u64::MAX; 4]);

    /// The set of `bytes`.
    pub fn of(bytes: &[u8]) -> ByteSet {
        let mut set = ByteSet::EMPTY;
        for &b in bytes {
            set.insert(b);
        }
        set
    }

    /// Adds `byte`.
    pub fn insert(&mut self, byte: u8) {
        self.0[usize::from(byte >> 6)] |= 1 << (byte & 63);
    }

    /// Adds every byte in `lo..=hi`.
    fn insert_range(&mut self, lo: u8, hi: u8) {
        for b in lo..=hi {
            self.insert(b);
        }
    }

    /// Whether `byte` is in the set.
    #[inline]
    pub fn contains(&self, byte: u8) -> bool {
        self.0[usize::from(byte >> 6)] >> (byte & 63) & 1 == 1
    }

    /// Both sets' bytes.
    pub fn union(self, other: ByteSet) -> ByteSet {
        let mut set = self;
        for (a, b) in set.0.iter_mut().zip(other.0) {
            *a |= b;
        }
        set
    }

    /// The bytes in the set, in increasing order.
    pub fn bytes(self) -> impl Iterator<Item = u8> {
        self.0.into_iter().enumerate().flat_map(|(word, mut bits)| {
            std::iter::from_fn(move || {
                let bit = bits.trailing_zeros();
                (bits != 0).then(|| {
                    bits &= bits - 1;
                    (word as u32 * 64 + bit) as u8
                })
            })
        })
    }
}

/// What a piece of the regex says about the bytes its matches begin with.
struct Run {
    /// Class of each of the first bytes of every match.
    classes: Vec<ByteSet>,
    /// Whether every match is exactly `classes.len()` bytes long, so what
    /// follows in a concatenation goes on the run.
    fixed: bool,
}

impl Run {
    fn fixed(classes: Vec<ByteSet>) -> Run {
        Run {
            classes,
            fixed: true,
        }
    }

    /// The run ends here: `classes` and then some variable text.
    fn ends(classes: Vec<ByteSet>) -> Run {
        Run {
            classes,
            fixed: false,
        }
    }
}

/// The byte classes every match of `hir` begins with (at most
/// [`MAX_PREFIX`]); empty when nothing is known (a match may begin with
/// any byte, or be empty).
pub(super) fn class_prefix(hir: &Hir) -> Vec<ByteSet> {
    let mut classes = run(hir).classes;
    classes.truncate(MAX_PREFIX);
    // A leading `ALL` class says nothing: the prefix would be no filter.
    if classes.first() == Some(&ByteSet::ALL) {
        classes.clear();
    }
    classes
}

fn run(hir: &Hir) -> Run {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => Run::fixed(Vec::new()),
        HirKind::Literal(lit) => Run::fixed(lit.0.iter().map(|&b| ByteSet::of(&[b])).collect()),
        HirKind::Class(Class::Bytes(c)) => {
            let mut set = ByteSet::EMPTY;
            for r in c.ranges() {
                set.insert_range(r.start(), r.end());
            }
            Run::fixed(vec![set])
        }
        HirKind::Class(Class::Unicode(c)) => {
            let mut set = ByteSet::EMPTY;
            let mut ascii = true;
            for r in c.ranges() {
                let (lo, hi) = (u32::from(r.start()), u32::from(r.end()));
                if lo <= 0x7F {
                    set.insert_range(lo as u8, hi.min(0x7F) as u8);
                }
                if hi > 0x7F {
                    ascii = false;
                }
            }
            if ascii {
                Run::fixed(vec![set])
            } else {
                // A character of two or more bytes begins with one of these;
                // how many bytes it takes varies, so the run ends.
                set.insert_range(0xC0, 0xFF);
                Run::ends(vec![set])
            }
        }
        HirKind::Capture(c) => run(&c.sub),
        HirKind::Concat(items) => {
            let mut classes = Vec::new();
            for item in items {
                let r = run(item);
                classes.extend(r.classes);
                if !r.fixed || classes.len() >= MAX_PREFIX {
                    return Run::ends(classes);
                }
            }
            Run::fixed(classes)
        }
        HirKind::Alternation(branches) => {
            let runs: Vec<Run> = branches.iter().map(run).collect();
            let shortest = runs.iter().map(|r| r.classes.len()).min().unwrap_or(0);
            let classes = (0..shortest)
                .map(|i| {
                    runs.iter()
                        .fold(ByteSet::EMPTY, |set, r| set.union(r.classes[i]))
                })
                .collect();
            let fixed = runs.iter().all(|r| r.fixed && r.classes.len() == shortest);
            Run { classes, fixed }
        }
        HirKind::Repetition(rep) => {
            if rep.min == 0 {
                // It may match nothing: what follows could come first.
                return Run::ends(Vec::new());
            }
            let once = run(&rep.sub);
            if !once.fixed {
                return Run::ends(once.classes);
            }
            let mut classes = Vec::new();
            for _ in 0..rep.min {
                if classes.len() >= MAX_PREFIX || once.classes.is_empty() {
                    break;
                }
                classes.extend(once.classes.iter().copied());
            }
            let fixed = rep.max == Some(rep.min) && classes.len() < MAX_PREFIX;
            Run { classes, fixed }
        }
    }
}

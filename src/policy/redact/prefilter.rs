//! The keyword prefilter: one pass over the text that says where each rule's
//! keywords occur, so a rule's regex runs only near them.
//!
//! Up to three stages, each letting fewer positions through:
//! - on x86_64 CPUs with AVX2, a SIMD fingerprint of keyword beginnings
//!   ([`super::fingerprint`]) checks 32 positions at a time with byte
//!   shuffles (64 at a time with byte permutes where AVX-512 VBMI is there)
//!   and lets through well under 1% of ordinary text (code, logs);
//! - a trigram sieve hashes the (ASCII-case-folded) three bytes at a
//!   position into a 16 K-slot table of keyword beginnings, and a second
//!   table under another hash weeds out most of the first's collisions.
//!   Without the fingerprint (other CPUs, or a keyword set too large for
//!   it) the sieve looks at every position, eight at a time, with no
//!   per-byte state to carry; with it, only at the positions it passes, and
//!   at the last few bytes, which it leaves;
//! - at the few positions left, an Aho-Corasick automaton (leftmost-longest,
//!   ASCII case-insensitive) runs anchored and names the keyword starting
//!   there exactly, usually failing after a byte or two.
//!
//! The first two stages only drop positions where no keyword begins, so the
//! keywords found are the same with or without them. They need keywords of
//! three bytes or more; a set with a shorter one runs the automaton
//! unanchored over the whole text.
//!
//! Where the fingerprint runs, it also finds where rules without keywords
//! can match: the byte classes every match of such a rule begins with (its
//! class prefix, see `prefix`) go into the fingerprint next to the keywords,
//! and each position it lets through is checked against them exactly. Such
//! a rule is then *covered* ([`Keywords::covers`]) and runs only around
//! those positions; a rule whose prefix would let through too much, or any
//! rule where there is no fingerprint, runs over all text as before.

use aho_corasick::{AhoCorasick, AhoCorasickKind, Anchored, Input, MatchKind, StartKind};

use super::fingerprint::{self, Fingerprint};
use super::prefix::{ByteSet, MAX_PREFIX};

/// Positions the sieve checks per step.
const BLOCK: usize = 8;
/// Bytes a step reads: a trigram at each of the [`BLOCK`] positions.
const BLOCK_READ: usize = BLOCK + 3;
/// Slots in the sieve's table: a byte each, 16 KB, so it stays in L1.
const TABLE_SLOTS: usize = 1 << 14;

/// A class prefix is found by the prefilter only when the fingerprint would
/// let through at most this share of ordinary text for it (estimated):
/// else its rule runs over all text, as without a prefix.
const MAX_PREFIX_RATE: f64 = 0.001;

/// A covered rule's class prefix.
struct Prefix {
    rule: u32,
    classes: Vec<ByteSet>,
}

impl Prefix {
    /// Whether the classes occur at `pos` (whole, within `hay`).
    #[inline]
    fn begins_at(&self, hay: &[u8], pos: usize) -> bool {
        hay.get(pos..pos + self.classes.len())
            .is_some_and(|bytes| self.classes.iter().zip(bytes).all(|(c, &b)| c.contains(b)))
    }
}

/// Where keywords occur, and which rules each one wakes.
pub(super) struct Keywords {
    automaton: AhoCorasick,
    /// Per automaton pattern: the rules to run when it is the longest keyword
    /// at a position (its own rules and those of keywords that are prefixes
    /// of it, which start at the same place).
    rules: Vec<Vec<u32>>,
    /// Longest keyword, in bytes.
    max_len: usize,
    /// The trigram table, when every keyword has three bytes or more.
    sieve: Option<Box<[u8; TABLE_SLOTS]>>,
    /// The same keyword beginnings under a second hash, to weed out most
    /// of the first table's collisions before the automaton runs.
    sieve2: Box<[u8; TABLE_SLOTS]>,
    /// The SIMD first stage, when the CPU has it and the keywords suit it
    /// (only with `sieve`).
    fingerprint: Option<Fingerprint>,
    /// The class prefixes of the rules covered (only with `fingerprint`).
    prefixes: Vec<Prefix>,
    /// The bytes any of `prefixes` can begin with: a position whose byte is
    /// not one has none of them (most positions of a short text, which the
    /// fingerprint leaves to the byte loop).
    prefix_first: ByteSet,
}

impl Keywords {
    /// Builds the prefilter from each rule's lower-cased keywords and the
    /// class prefixes of rules without keywords; `None` when it would find
    /// nothing (no keywords, and no prefix it can cover).
    pub fn new<'a>(
        per_rule: impl Iterator<Item = (u32, &'a [Box<[u8]>])>,
        prefixes: impl Iterator<Item = (u32, &'a [ByteSet])>,
    ) -> Result<Option<Keywords>, String> {
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut own: Vec<Vec<u32>> = Vec::new();
        for (rule, keywords) in per_rule {
            for k in keywords {
                let k = k.to_ascii_lowercase();
                let i = match patterns.iter().position(|p| *p == k) {
                    Some(i) => i,
                    None => {
                        patterns.push(k);
                        own.push(Vec::new());
                        patterns.len() - 1
                    }
                };
                if !own[i].contains(&rule) {
                    own[i].push(rule);
                }
            }
        }
        let mut prefixes: Vec<Prefix> = prefixes
            .filter(|(_, classes)| {
                !classes.is_empty() && fingerprint::class_pass_rate(classes) <= MAX_PREFIX_RATE
            })
            .map(|(rule, classes)| Prefix {
                rule,
                classes: classes[..classes.len().min(MAX_PREFIX)].to_vec(),
            })
            .collect();
        if patterns.is_empty() && prefixes.is_empty() {
            return Ok(None);
        }
        let rules = patterns
            .iter()
            .map(|p| {
                let mut rules: Vec<u32> = patterns
                    .iter()
                    .zip(&own)
                    .filter(|(q, _)| p.starts_with(q))
                    .flat_map(|(_, r)| r.iter().copied())
                    .collect();
                rules.sort_unstable();
                rules.dedup();
                rules
            })
            .collect();
        // With the sieve, the automaton only runs anchored at the few
        // positions it lets through, and a contiguous NFA builds several
        // times faster than a DFA (a cold start redacting one output pays
        // for the build). Without it, the automaton scans the whole text.
        let sieved = patterns.iter().all(|p| p.len() >= 3);
        let kind = if sieved {
            AhoCorasickKind::ContiguousNFA
        } else {
            AhoCorasickKind::DFA
        };
        let automaton = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(kind))
            .start_kind(StartKind::Both)
            .build(&patterns)
            .or_else(|_| {
                // Too many states for a DFA: the NFA is slower but has no such limit.
                AhoCorasick::builder()
                    .ascii_case_insensitive(true)
                    .match_kind(MatchKind::LeftmostLongest)
                    .start_kind(StartKind::Both)
                    .build(&patterns)
            })
            .map_err(|e| format!("the keywords of all rules together are too many: {e}"))?;
        let mut sieve2 = Box::new([0u8; TABLE_SLOTS]);
        let mut fingerprint = None;
        let sieve = sieved.then(|| {
            let mut table = Box::new([0u8; TABLE_SLOTS]);
            for p in &patterns {
                let tri = u32::from_le_bytes([p[0], p[1], p[2], 0]) | 0x0020_2020;
                table[slot(tri)] = 1;
                sieve2[slot2(tri)] = 1;
            }
            let keywords: Vec<&[u8]> = patterns.iter().map(Vec::as_slice).collect();
            let classes: Vec<&[ByteSet]> = prefixes.iter().map(|p| &p.classes[..]).collect();
            fingerprint = Fingerprint::with_classes(&keywords, &classes);
            if fingerprint.is_none() && !prefixes.is_empty() {
                // Too much for one fingerprint: the keywords alone.
                prefixes.clear();
                fingerprint = Fingerprint::new(&keywords);
            }
            table
        });
        if fingerprint.is_none() {
            prefixes.clear();
        }
        if patterns.is_empty() && prefixes.is_empty() {
            return Ok(None);
        }
        let max_len = patterns
            .iter()
            .map(Vec::len)
            .chain(prefixes.iter().map(|p| p.classes.len()))
            .max()
            .unwrap_or(0);
        let prefix_first = first_bytes(&prefixes);
        Ok(Some(Keywords {
            automaton,
            max_len,
            rules,
            sieve,
            sieve2,
            fingerprint,
            prefixes,
            prefix_first,
        }))
    }

    /// Whether `scan` reports where `rule`'s class prefix occurs, so the
    /// rule need only run around those positions.
    pub fn covers(&self, rule: u32) -> bool {
        self.prefixes.iter().any(|p| p.rule == rule)
    }

    /// Reports the class prefixes that begin at `pos`.
    #[inline]
    fn prefixes_at(&self, hay: &[u8], pos: usize, found: &mut impl FnMut(usize, &[u32])) {
        for p in &self.prefixes {
            if p.begins_at(hay, pos) {
                found(pos, std::slice::from_ref(&p.rule));
            }
        }
    }

    /// Longest keyword (or class prefix), in bytes: how far a keyword
    /// starting before a point can reach past it.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Calls `found(position, rules)` for every position in `from..to` where
    /// a keyword or a covered rule's class prefix starts, in order for each
    /// rule. `hay` must reach `max_len() - 1` bytes past `to` (or end
    /// there), so the keywords starting before `to` can be read whole.
    pub fn scan(&self, hay: &[u8], from: usize, to: usize, mut found: impl FnMut(usize, &[u32])) {
        let Some(table) = &self.sieve else {
            self.exact(hay, from, to, &mut found);
            return;
        };
        let end = hay
            .len()
            .min(to.saturating_add(self.max_len).saturating_sub(1));
        let verify_hay = &hay[..end.max(from)];
        let mut at = from;
        if let Some(fingerprint) = &self.fingerprint {
            at = fingerprint.scan(hay, at, to, |pos| {
                self.prefixes_at(verify_hay, pos, &mut found);
                let tri =
                    u32::from_le_bytes([hay[pos], hay[pos + 1], hay[pos + 2], 0]) | 0x0020_2020;
                if table[slot(tri)] != 0 && self.sieve2[slot2(tri)] != 0 {
                    self.verify(verify_hay, pos, &mut found);
                }
            });
        }
        // Class prefixes at the positions the fingerprint left (all of them
        // where it was dropped, in tests).
        if !self.prefixes.is_empty() {
            for pos in at..to {
                if hay.get(pos).is_some_and(|&b| self.prefix_first.contains(b)) {
                    self.prefixes_at(verify_hay, pos, &mut found);
                }
            }
        }
        while at < to {
            if at + BLOCK > to || at + BLOCK_READ > hay.len() {
                self.tail(hay, verify_hay, table, at, to, &mut found);
                return;
            }
            let mut candidates = block_candidates(hay, at, table);
            while candidates != 0 {
                let pos = at + candidates.trailing_zeros() as usize;
                candidates &= candidates - 1;
                let tri = u32::from_le_bytes([hay[pos], hay[pos + 1], hay[pos + 2], 0]);
                if self.sieve2[slot2(tri | 0x0020_2020)] == 0 {
                    continue;
                }
                self.verify(verify_hay, pos, &mut found);
            }
            at += BLOCK;
        }
    }

    /// The last positions, fewer than a block (a short text is only
    /// these): the sieve at each, as a block checks its eight, then the
    /// automaton anchored where it passes. Finds what the automaton alone
    /// finds (`exact`), whose set-up cost more than the few lookups here.
    #[inline]
    fn tail(
        &self,
        hay: &[u8],
        verify_hay: &[u8],
        table: &[u8; TABLE_SLOTS],
        from: usize,
        to: usize,
        found: &mut impl FnMut(usize, &[u32]),
    ) {
        for pos in from..to {
            // Every keyword has three bytes or more (there is a sieve): none
            // starts in the last two bytes.
            let Some(&[a, b, c]) = hay.get(pos..pos + 3) else {
                return;
            };
            let tri = u32::from_le_bytes([a, b, c, 0]) | 0x0020_2020;
            if table[slot(tri)] != 0 && self.sieve2[slot2(tri)] != 0 {
                self.verify(verify_hay, pos, found);
            }
        }
    }

    /// The automaton, anchored at `pos`: reports the keyword starting there, if any.
    #[inline]
    fn verify(&self, hay: &[u8], pos: usize, found: &mut impl FnMut(usize, &[u32])) {
        let input = Input::new(hay).range(pos..).anchored(Anchored::Yes);
        if let Some(m) = self.automaton.find(input) {
            found(pos, &self.rules[m.pattern().as_usize()]);
        }
    }

    /// The keywords in `from..to` by the automaton alone, unanchored, and
    /// the class prefixes position by position: what `scan` must find (for
    /// tests).
    #[cfg(test)]
    pub fn scan_exact(
        &self,
        hay: &[u8],
        from: usize,
        to: usize,
        mut found: impl FnMut(usize, &[u32]),
    ) {
        let end = hay
            .len()
            .min(to.saturating_add(self.max_len).saturating_sub(1));
        for pos in from..to {
            self.prefixes_at(&hay[..end.max(from)], pos, &mut found);
        }
        self.exact(hay, from, to, &mut found);
    }

    /// Whether the SIMD first stage runs.
    #[cfg(test)]
    pub fn has_fingerprint(&self) -> bool {
        self.fingerprint.is_some()
    }

    /// Drops the SIMD first stage, so the sieve runs alone (for tests that
    /// compare the two).
    #[cfg(test)]
    pub fn drop_fingerprint(&mut self) {
        self.fingerprint = None;
    }

    /// Drops the sieve (and with it the fingerprint and the class
    /// prefixes), so the automaton alone scans every text, unanchored, as
    /// it does for keyword sets with a short keyword (for tests that hold
    /// the sieve's paths to it).
    #[cfg(test)]
    pub fn drop_sieve(&mut self) {
        self.sieve = None;
        self.fingerprint = None;
        self.prefixes.clear();
        self.prefix_first = ByteSet::EMPTY;
    }

    /// Stops finding class prefixes, so rules without keywords run over all
    /// text (for tests that compare the two).
    #[cfg(test)]
    pub fn drop_prefixes(&mut self) {
        self.prefixes.clear();
        self.prefix_first = ByteSet::EMPTY;
    }

    /// Drops the fingerprint's AVX-512 steps, so its AVX2 steps run alone
    /// (for tests that compare the two).
    #[cfg(test)]
    pub fn drop_vbmi(&mut self) {
        if let Some(f) = &mut self.fingerprint {
            f.drop_vbmi();
        }
    }

    /// The automaton over the keyword starts in `from..to`.
    fn exact(&self, hay: &[u8], from: usize, to: usize, found: &mut impl FnMut(usize, &[u32])) {
        let end = hay
            .len()
            .min(to.saturating_add(self.max_len).saturating_sub(1));
        let hay = &hay[..end.max(from)];
        let mut at = from;
        while at < to {
            let Some(m) = self.automaton.find(Input::new(hay).range(at..)) else {
                return;
            };
            if m.start() >= to {
                return;
            }
            found(m.start(), &self.rules[m.pattern().as_usize()]);
            // Restart one byte on, not at the match end: keywords inside this
            // one (`sk` in `task_sk_live_`) must be found too.
            at = m.start() + 1;
        }
    }
}

/// The union of the prefixes' first classes.
fn first_bytes(prefixes: &[Prefix]) -> ByteSet {
    prefixes
        .iter()
        .filter_map(|p| p.classes.first())
        .fold(ByteSet::EMPTY, |all, c| all.union(*c))
}

fn slot(folded: u32) -> usize {
    (folded.wrapping_mul(0x9E37_79B1) >> 18) as usize
}

fn slot2(folded: u32) -> usize {
    (folded.wrapping_mul(0x85EB_CA6B) >> 18) as usize
}

/// Which of the [`BLOCK`] positions from `at` a keyword may start at, as
/// bits. Setting bit 5 folds ASCII case (and maps a few punctuation pairs
/// onto each other, which only lets a little more through).
#[inline(always)]
fn block_candidates(hay: &[u8], at: usize, table: &[u8; TABLE_SLOTS]) -> u32 {
    // One bounds check for the block; the loads below are then unchecked.
    let w: &[u8; BLOCK_READ] = hay[at..at + BLOCK_READ]
        .try_into()
        .expect("BLOCK_READ bytes");
    let look = |j: usize| {
        let quad = u32::from_le_bytes([w[j], w[j + 1], w[j + 2], w[j + 3]]);
        table[slot((quad | 0x2020_2020) & 0x00FF_FFFF)]
    };
    // Nearly every block has no candidate: test that first, without
    // assembling the positions.
    let mut any = 0u8;
    for j in 0..BLOCK {
        any |= look(j);
    }
    if any == 0 {
        return 0;
    }
    let mut bits = 0u32;
    for j in 0..BLOCK {
        bits |= u32::from(look(j)) << j;
    }
    bits
}

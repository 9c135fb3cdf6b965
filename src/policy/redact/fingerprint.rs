//! The prefilter's first stage on x86_64 CPUs with AVX2: a SIMD fingerprint
//! of keyword beginnings that checks 32 positions in a few dozen
//! instructions, so the trigram sieve only sees the few positions it lets
//! through.
//!
//! Each keyword's first four bytes (three for a three-byte keyword; all
//! ASCII-case-folded by setting bit 5, as the sieve does) go into one of 16
//! buckets. For each of the four offsets, two 16-entry tables, indexed by a
//! byte's low and high nibble, hold the buckets that allow that nibble there
//! (a three-byte keyword's bucket allows anything at the fourth); a position
//! passes when some bucket allows all eight of its nibbles (AVX2's byte
//! shuffle does the 16-entry lookups, 32 at a time). So every position where
//! a keyword begins passes, and so do some others: a bucket allows every
//! combination of its keywords' nibbles. Four bytes rather than the sieve's
//! three matter on real text: `print` and `where` begin like `private key`
//! and `heroku` for three bytes, not for four. Keywords are put in buckets so as to keep that small
//! on ordinary text, by a rough model of byte frequencies; when the
//! keywords are too many for that (the estimated share of positions passing
//! is over [`MAX_PASS_RATE`]), there is no fingerprint and the sieve runs
//! alone, as it does on other CPUs.
//!
//! Rules without keywords add their class prefixes (see `prefix`): the
//! bytes each offset allows, folded like the text, in buckets of their own.
//!
//! On CPUs with AVX-512 VBMI, byte tables of the same keyword beginnings
//! ([`super::permute`]) check 64 positions at a time first; the nibble
//! steps take the positions left when such a step no longer fits.

/// Buckets, in two sets of eight (a bit of a byte each).
const BUCKETS: usize = 16;

/// Positions one step checks.
pub(super) const STEP: usize = 32;

use super::permute::{self, Beginning, ByteTables, WIDTH};
use super::prefix::ByteSet;

/// Bytes one step reads: [`WIDTH`] at each of the [`STEP`] positions.
pub(super) const STEP_READ: usize = STEP + WIDTH - 1;

/// Above this estimated share of positions passing, the fingerprint would
/// cost more than it saves.
const MAX_PASS_RATE: f64 = 0.1;

/// The nibble tables: `[bucket set][offset][low, high nibble]`, each 16
/// entries repeated for both 128-bit lanes of an AVX2 register.
type Tables = [[[[u8; 32]; 2]; WIDTH]; 2];

pub(super) struct Fingerprint {
    tables: Tables,
    /// Whether the second bucket set is used.
    wide: bool,
    /// The AVX-512 VBMI first step, when this CPU has it.
    bytes: Option<ByteTables>,
}

impl Fingerprint {
    /// The fingerprint of `keywords` (lower-cased, three bytes or more),
    /// or `None` when this CPU has no AVX2 or the keywords are too many for
    /// the fingerprint to pay.
    pub fn new(keywords: &[&[u8]]) -> Option<Fingerprint> {
        Fingerprint::with_classes(keywords, &[])
    }

    /// Like [`Fingerprint::new`], also letting through every position where
    /// one of `classes` (rules' class prefixes, see `prefix`) begins.
    pub fn with_classes(keywords: &[&[u8]], classes: &[&[ByteSet]]) -> Option<Fingerprint> {
        if !avx2() {
            return None;
        }
        Fingerprint::build(keywords, classes)
    }

    /// [`Fingerprint::with_classes`] whatever the CPU.
    fn build(keywords: &[&[u8]], classes: &[&[ByteSet]]) -> Option<Fingerprint> {
        let beginnings: Vec<Beginning> = keywords
            .iter()
            .map(|k| Beginning::keyword(k))
            .chain(classes.iter().map(|c| Beginning::classes(c)))
            .collect();
        let buckets = assign(&beginnings)?;
        let mut tables: Tables = [[[[0; 32]; 2]; WIDTH]; 2];
        for (k, bucket) in buckets.iter().enumerate() {
            let (set, bit) = (k / 8, 1u8 << (k % 8));
            for beginning in bucket {
                for (i, offset) in tables[set].iter_mut().enumerate() {
                    let (lo, hi) = nibbles(beginning.sets[i]);
                    for (kind, table) in offset.iter_mut().enumerate() {
                        let allowed = [lo, hi][kind];
                        for (entry, slot) in table.iter_mut().enumerate() {
                            if allowed >> (entry % 16) & 1 == 1 {
                                *slot |= bit;
                            }
                        }
                    }
                }
            }
        }
        Some(Fingerprint {
            tables,
            wide: buckets[8..].iter().any(|b| !b.is_empty()),
            bytes: permute::avx512_vbmi().then(|| {
                let beginnings: Vec<Beginning> = buckets.iter().flatten().copied().collect();
                ByteTables::new(&beginnings, &byte_frequencies())
            }),
        })
    }

    /// Calls `candidate(position)`, in order, for every position from `at`
    /// that the fingerprint lets through, [`STEP`] positions at a time while
    /// a whole step fits before `to` and [`STEP_READ`] bytes fit in `hay`.
    /// Returns where it stopped: the positions from there on are the
    /// caller's to check.
    #[cfg(target_arch = "x86_64")]
    pub fn scan(
        &self,
        hay: &[u8],
        at: usize,
        to: usize,
        mut candidate: impl FnMut(usize),
    ) -> usize {
        // SAFETY: a `Fingerprint` is only made by `new`, which checked that
        // this CPU has AVX2, and `bytes` is only made where it has AVX-512
        // VBMI.
        unsafe {
            let at = match &self.bytes {
                Some(bytes) => bytes.scan(hay, at, to, &mut candidate),
                None => at,
            };
            if self.wide {
                self.scan_avx2::<true>(hay, at, to, candidate)
            } else {
                self.scan_avx2::<false>(hay, at, to, candidate)
            }
        }
    }

    /// Without AVX2 there is no fingerprint (`new` says `None`), so this
    /// is never called.
    #[cfg(not(target_arch = "x86_64"))]
    pub fn scan(&self, _: &[u8], at: usize, _: usize, _: impl FnMut(usize)) -> usize {
        at
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn scan_avx2<const WIDE: bool>(
        &self,
        hay: &[u8],
        mut at: usize,
        to: usize,
        mut candidate: impl FnMut(usize),
    ) -> usize {
        use std::arch::x86_64::*;
        let sets = if WIDE { 2 } else { 1 };
        let mut tables = [[_mm256_setzero_si256(); 2 * WIDTH]; 2];
        for (set, loaded) in tables.iter_mut().enumerate().take(sets) {
            for (i, offset) in self.tables[set].iter().enumerate() {
                loaded[2 * i] = load(&offset[0]);
                loaded[2 * i + 1] = load(&offset[1]);
            }
        }
        let fold = _mm256_set1_epi8(0x20);
        let low = _mm256_set1_epi8(0x0F);
        while at + STEP <= to && at + STEP_READ <= hay.len() {
            let mut pass = [_mm256_set1_epi8(-1); 2];
            for i in 0..WIDTH {
                let bytes = hay[at + i..]
                    .first_chunk::<STEP>()
                    .expect("the loop condition leaves STEP_READ bytes");
                let v = _mm256_or_si256(load(bytes), fold);
                let lo = _mm256_and_si256(v, low);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), low);
                for set in 0..sets {
                    let t = &tables[set];
                    let allowed = _mm256_and_si256(
                        _mm256_shuffle_epi8(t[2 * i], lo),
                        _mm256_shuffle_epi8(t[2 * i + 1], hi),
                    );
                    pass[set] = _mm256_and_si256(pass[set], allowed);
                }
            }
            let pass = if WIDE {
                _mm256_or_si256(pass[0], pass[1])
            } else {
                pass[0]
            };
            let none = _mm256_cmpeq_epi8(pass, _mm256_setzero_si256());
            let mut bits = !(_mm256_movemask_epi8(none) as u32);
            while bits != 0 {
                candidate(at + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
            at += STEP;
        }
        at
    }

    /// What [`Fingerprint::scan`] computes for the step at `at`, one
    /// position and table entry at a time: the model the SIMD code is
    /// tested against.
    #[cfg(test)]
    pub fn step_model(&self, hay: &[u8], at: usize) -> u32 {
        let sets = if self.wide { 2 } else { 1 };
        let mut bits = 0;
        for j in 0..STEP {
            let mut any = 0u8;
            for set in &self.tables[..sets] {
                let mut pass = 0xFF;
                for (i, offset) in set.iter().enumerate() {
                    let byte = hay[at + j + i] | 0x20;
                    pass &= offset[0][usize::from(byte & 15)] & offset[1][usize::from(byte >> 4)];
                }
                any |= pass;
            }
            bits |= u32::from(any != 0) << j;
        }
        bits
    }

    /// The byte tables, when they run.
    #[cfg(test)]
    pub fn byte_tables(&self) -> Option<&ByteTables> {
        self.bytes.as_ref()
    }

    /// Drops the byte tables' steps, so the nibble steps run alone (for
    /// tests that compare the two).
    #[cfg(test)]
    pub fn drop_vbmi(&mut self) {
        self.bytes = None;
    }

    /// [`Fingerprint::new`], except that the fingerprint is made even when
    /// this CPU has no AVX2 (to test the bucketing; its `scan` must not run).
    #[cfg(test)]
    pub fn build_anywhere(keywords: &[&[u8]]) -> Option<Fingerprint> {
        Fingerprint::build(keywords, &[])
    }
}

/// Whether this CPU has AVX2 (detected once, then cached by std).
pub(super) fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A 32-byte unaligned load.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn load(bytes: &[u8; 32]) -> std::arch::x86_64::__m256i {
    // SAFETY: `bytes` is 32 readable bytes, the width of the load, and an
    // unaligned load has no alignment requirement.
    unsafe { std::arch::x86_64::_mm256_loadu_si256(bytes.as_ptr().cast()) }
}

/// The low and high nibbles of the bytes of `set` with bit 5 set (the
/// steps fold the text so), as bit sets of nibble values; every nibble for
/// every byte.
fn nibbles(set: ByteSet) -> (u16, u16) {
    if set == ByteSet::ALL {
        return (u16::MAX, u16::MAX);
    }
    set.bytes().fold((0, 0), |(lo, hi), b| {
        let b = b | 0x20;
        (lo | 1 << (b & 15), hi | 1 << (b >> 4))
    })
}

/// One bucket's allowed nibbles at each offset, as bit sets of nibble values.
#[derive(Clone, Copy, Default)]
struct Nibbles {
    lo: [u16; WIDTH],
    hi: [u16; WIDTH],
}

impl Nibbles {
    /// Those of one beginning.
    fn of(b: &Beginning) -> Nibbles {
        let mut n = Nibbles::default();
        for i in 0..WIDTH {
            (n.lo[i], n.hi[i]) = nibbles(b.sets[i]);
        }
        n
    }

    /// Both buckets' nibbles.
    fn or(mut self, other: &Nibbles) -> Nibbles {
        for i in 0..WIDTH {
            self.lo[i] |= other.lo[i];
            self.hi[i] |= other.hi[i];
        }
        self
    }

    /// The estimated share of positions the bucket lets through: at each
    /// offset, the chance that a byte has an allowed low and high nibble,
    /// multiplied.
    fn pass_rate(&self, freq: &[f64; 256]) -> f64 {
        let mut rate = 1.0;
        for i in 0..WIDTH {
            if self.lo[i] == u16::MAX && self.hi[i] == u16::MAX {
                continue; // anything: a factor of 1
            }
            let mut at_offset = 0.0;
            let mut his = self.hi[i];
            while his != 0 {
                let hi = his.trailing_zeros() as usize;
                his &= his - 1;
                let mut los = self.lo[i];
                while los != 0 {
                    at_offset += freq[hi << 4 | los.trailing_zeros() as usize];
                    los &= los - 1;
                }
            }
            rate *= at_offset;
        }
        rate
    }
}

/// Puts the keywords' beginnings into [`BUCKETS`] buckets, each where it
/// adds least to the estimated share of positions passing; `None` when that
/// share ends up over [`MAX_PASS_RATE`]. Deterministic: ties go to the
/// lower bucket.
fn assign(beginnings: &[Beginning]) -> Option<Vec<Vec<Beginning>>> {
    let freq = byte_frequencies();
    let mut order: Vec<Beginning> = beginnings.to_vec();
    order.sort_unstable();
    order.dedup();
    // The commonest first, while there are empty buckets to give them.
    let mut order: Vec<(f64, Beginning, Nibbles)> = order
        .into_iter()
        .map(|b| {
            let own = Nibbles::of(&b);
            (own.pass_rate(&freq), b, own)
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    let classes = order.iter().filter(|(_, b, _)| b.is_class()).count();
    let mut buckets = vec![Vec::new(); BUCKETS];
    let mut nibbles = [Nibbles::default(); BUCKETS];
    let mut rates = [0.0f64; BUCKETS];
    for (_, beginning, own) in order {
        let mut best = (f64::INFINITY, 0, Nibbles::default());
        for k in beginning.buckets(BUCKETS, classes) {
            let with = nibbles[k].or(&own);
            let added = with.pass_rate(&freq) - rates[k];
            if added < best.0 {
                best = (added, k, with);
            }
        }
        let (added, k, with) = best;
        rates[k] += added;
        nibbles[k] = with;
        buckets[k].push(beginning);
    }
    (rates.iter().sum::<f64>() <= MAX_PASS_RATE).then_some(buckets)
}

/// A rough model of how often each byte occurs in the text tools print
/// (code, logs, prose), after folding (bit 5 set), summing to 1. It only
/// steers the bucketing; a wrong guess costs speed, never a keyword.
fn byte_frequencies() -> [f64; 256] {
    let mut freq = [0.0; 256];
    for b in 0..=255u8 {
        freq[usize::from(b | 0x20)] += weight(b);
    }
    let total: f64 = freq.iter().sum();
    freq.map(|f| f / total)
}

/// The estimated share of positions of ordinary text that a fingerprint
/// of `classes` alone lets through on this CPU: the byte tables see bytes
/// as they are, the nibble steps fold case and combine nibbles.
pub(super) fn class_pass_rate(classes: &[ByteSet]) -> f64 {
    if permute::avx512_vbmi() {
        class_rate(classes)
    } else {
        Nibbles::of(&Beginning::classes(classes)).pass_rate(&byte_frequencies())
    }
}

/// The estimated share of positions of ordinary text where `classes` begin
/// (exact bytes, not folded), by the model of [`byte_frequencies`], over
/// the first [`WIDTH`] classes (what the fingerprint looks at).
fn class_rate(classes: &[ByteSet]) -> f64 {
    let total: f64 = (0..=255u8).map(weight).sum();
    classes
        .iter()
        .take(WIDTH)
        .map(|set| set.bytes().map(weight).sum::<f64>() / total)
        .product()
}

/// The model's weight of one byte.
fn weight(b: u8) -> f64 {
    // English letter frequencies, in percent.
    const LETTERS: [f64; 26] = [
        8.2, 1.5, 2.8, 4.3, 12.7, 2.2, 2.0, 6.1, 7.0, 0.15, 0.8, 4.0, 2.4, 6.7, 7.5, 1.9, 0.1, 6.0,
        6.3, 9.1, 2.8, 1.0, 2.4, 0.15, 2.0, 0.07,
    ];
    match b {
        b'a'..=b'z' => 0.7 * LETTERS[usize::from(b - b'a')],
        b'A'..=b'Z' => 0.1 * LETTERS[usize::from(b - b'A')],
        b' ' => 15.0,
        b'\n' => 2.0,
        b'0'..=b'9' => 0.5,
        b'.' | b',' | b'_' | b'(' | b')' | b'=' | b':' | b';' | b'/' | b'"' | b'\'' | b'-' => 1.0,
        0x21..=0x7E => 0.2,
        0x80..=0xFF => 0.05,
        _ => 0.01,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<'a>(keywords: &[&'a str]) -> Vec<&'a [u8]> {
        keywords.iter().map(|k| k.as_bytes()).collect()
    }

    #[test]
    fn every_keyword_beginning_passes() {
        let keywords = [
            "ghp_", "akia", "token", "secret", "://", "sk-ant-", "r8_", "ya29.",
        ];
        let fp = Fingerprint::build_anywhere(&bytes(&keywords)).expect("few keywords fit");
        for k in keywords {
            for variant in [k.to_string(), k.to_ascii_uppercase()] {
                let mut hay = vec![b' '; STEP_READ + 8];
                hay[5..5 + k.len()].copy_from_slice(variant.as_bytes());
                assert_ne!(fp.step_model(&hay, 0) & (1 << 5), 0, "{variant}");
            }
        }
        // Eight keywords need only the first bucket set.
        assert!(!fp.wide);
        // The fourth byte counts, where a keyword has one.
        let hay = b"     tokyo     secure    ://x      r8 _                             ";
        assert_eq!(fp.step_model(hay, 0), 1 << 25);
    }

    /// The AVX2 code computes exactly what the model says, on random bytes
    /// and on bytes made of the keywords' own.
    #[test]
    fn simd_steps_match_the_model() {
        if !avx2() {
            return;
        }
        let sets: [&[&str]; 3] = [
            &["ghp_", "akia", "token"],
            &[
                "ghp_", "akia", "token", "secret", "://", "sk-ant-", "r8_", "ya29.", "xoxb-",
                "eyj", "hvs.", "passw",
            ],
            &["\u{e9}t\u{e9}", "a\u{7f}_", "@`[", "{|}"],
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for keywords in sets {
            let fp = Fingerprint::new(&bytes(keywords)).expect("few keywords fit");
            let alphabet: Vec<u8> = keywords.concat().into_bytes();
            for round in 0..2000 {
                let hay: Vec<u8> = (0..STEP_READ + 40)
                    .map(|_| {
                        let r = next();
                        if round % 2 == 0 {
                            r as u8
                        } else {
                            let b = alphabet[(r >> 8) as usize % alphabet.len()];
                            if r & 1 == 1 {
                                b ^ 0x20
                            } else {
                                b
                            }
                        }
                    })
                    .collect();
                for at in [0, 1, 5, 8] {
                    let mut got = 0u32;
                    let stop = fp.scan(&hay, at, at + STEP, |pos| got |= 1 << (pos - at));
                    assert_eq!(stop, at + STEP);
                    assert_eq!(got, fp.step_model(&hay, at), "{keywords:?} {hay:?} at {at}");
                }
                // It stops where a whole step no longer fits: 64 + 34 > 74.
                let stop = fp.scan(&hay, 0, hay.len(), |_| {});
                assert_eq!(stop, 2 * STEP);
            }
        }
    }

    #[test]
    fn too_many_keywords_get_no_fingerprint() {
        // Most letter trigrams: a bucket would let nearly everything through.
        let mut trigrams = Vec::new();
        for a in b'a'..=b'z' {
            for b in b'a'..=b'z' {
                for c in *b"etaoin" {
                    trigrams.push([a, b, c]);
                }
            }
        }
        let keywords: Vec<&[u8]> = trigrams.iter().map(|t| &t[..]).collect();
        assert!(Fingerprint::build_anywhere(&keywords).is_none());
    }
}

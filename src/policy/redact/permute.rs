//! The fingerprint's first step on x86_64 CPUs with AVX-512 VBMI: byte
//! tables of keyword beginnings, 64 positions at a time.
//!
//! For each of the first [`WIDTH`] offsets of a keyword beginning, a
//! 128-entry table indexed by a byte's low seven bits holds the buckets that
//! allow a byte with those bits there, and one two-register byte permute
//! (`vpermi2b`) looks up 64 bytes at once; a position passes when some
//! bucket allows the bytes at all four offsets. That is about a third of
//! the nibble steps' instructions per position ([`super::fingerprint`]),
//! and lets fewer positions through: a byte passes for what it is (either
//! ASCII case), not for a combination of its nibbles. Bytes of 0x80 and up
//! share the entries of the byte with bit 7 clear, which only lets more
//! through. Buckets are assigned here, apart from the nibble steps': exact
//! bytes mix well, so eight buckets (one permute per offset) usually do.
//!
//! Like the other stages, the tables only drop positions where no keyword
//! begins: every beginning sets its own bytes (both cases) at every offset
//! of its bucket.

use super::prefix::ByteSet;

/// Bytes of a keyword beginning the fingerprint looks at.
pub(super) const WIDTH: usize = 4;

/// What a keyword, or a rule's class prefix (see `prefix`), allows in the
/// first [`WIDTH`] bytes of a position where it begins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Beginning {
    /// The order buckets are filled in, among equals: a keyword's first
    /// bytes with bit 5 set, a class's smallest byte.
    bytes: [u8; WIDTH],
    len: usize,
    /// The bytes allowed at each offset: every byte past the end.
    pub sets: [ByteSet; WIDTH],
    /// Whether it is a class prefix: those get buckets of their own.
    class: bool,
}

impl Beginning {
    /// A keyword's beginning: its bytes in either ASCII case.
    pub fn keyword(keyword: &[u8]) -> Beginning {
        let mut b = Beginning {
            bytes: [0; WIDTH],
            len: keyword.len().min(WIDTH),
            sets: [ByteSet::ALL; WIDTH],
            class: false,
        };
        for (i, &k) in keyword.iter().take(WIDTH).enumerate() {
            b.bytes[i] = k | 0x20;
            b.sets[i] = ByteSet::of(&[k | 0x20, k & !0x20]);
        }
        b
    }

    /// A class prefix's beginning: exactly its classes (no case folding).
    pub fn classes(classes: &[ByteSet]) -> Beginning {
        let mut b = Beginning {
            bytes: [0; WIDTH],
            len: classes.len().min(WIDTH),
            sets: [ByteSet::ALL; WIDTH],
            class: true,
        };
        for (i, &set) in classes.iter().take(WIDTH).enumerate() {
            b.bytes[i] = set.bytes().next().unwrap_or(0);
            b.sets[i] = set;
        }
        b
    }

    /// Whether it is a class prefix's.
    pub fn is_class(&self) -> bool {
        self.class
    }

    /// The buckets, of `count`, that this beginning may go into, when
    /// `classes` of the beginnings are class prefixes. Those get a bucket
    /// per two of them, up to a quarter of the buckets, to themselves: a
    /// class's bytes mixed into a keyword's bucket combine with the
    /// keyword's into common words that neither begins, which the
    /// frequency model cannot foresee. (On the bench's clean text: 82,000
    /// positions through with the classes mixed in or given two of sixteen
    /// buckets, 16,600 with one.)
    pub fn buckets(&self, count: usize, classes: usize) -> std::ops::Range<usize> {
        let reserved = classes.div_ceil(2).min(count / 4);
        match (reserved, self.class) {
            (0, _) => 0..count,
            (_, true) => count - reserved..count,
            (_, false) => 0..count - reserved,
        }
    }
}

/// Buckets, in two sets of eight (a bit of a byte each).
const BUCKETS: usize = 16;

/// Positions one step checks.
pub(super) const STEP: usize = 64;

/// Bytes one step reads.
pub(super) const STEP_READ: usize = STEP + WIDTH - 1;

/// `[bucket set][offset][byte & 0x7F]`: the buckets that allow such a byte there.
type Tables = [[[u8; 128]; WIDTH]; 2];

/// The byte tables of a set of keyword beginnings.
pub(super) struct ByteTables {
    tables: Tables,
    /// Whether the second bucket set is used.
    wide: bool,
}

impl ByteTables {
    /// The tables of `beginnings`, bucketed by `freq`, the share of text
    /// each folded byte makes up.
    pub fn new(beginnings: &[Beginning], freq: &[f64; 256]) -> ByteTables {
        let buckets = assign(beginnings, freq);
        let mut tables: Tables = [[[0; 128]; WIDTH]; 2];
        for (k, bucket) in buckets.iter().enumerate() {
            let (set, bit) = (k / 8, 1u8 << (k % 8));
            for beginning in bucket {
                for (i, table) in tables[set].iter_mut().enumerate() {
                    // A keyword's byte in either case; past its end, any byte.
                    let mut entries = entries_of(beginning.sets[i]);
                    while entries != 0 {
                        table[entries.trailing_zeros() as usize] |= bit;
                        entries &= entries - 1;
                    }
                }
            }
        }
        ByteTables {
            tables,
            wide: buckets[8..].iter().any(|b| !b.is_empty()),
        }
    }

    /// Calls `candidate(position)`, in order, for every position from `at`
    /// that the tables let through, [`STEP`] positions at a time while a
    /// whole step fits before `to` and [`STEP_READ`] bytes fit in `hay`;
    /// returns where it stopped.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW and VBMI ([`avx512_vbmi`]).
    #[cfg(target_arch = "x86_64")]
    pub unsafe fn scan(
        &self,
        hay: &[u8],
        at: usize,
        to: usize,
        candidate: &mut impl FnMut(usize),
    ) -> usize {
        // SAFETY: the caller checked the CPU.
        unsafe {
            if self.wide {
                self.scan_vbmi::<true>(hay, at, to, candidate)
            } else {
                self.scan_vbmi::<false>(hay, at, to, candidate)
            }
        }
    }

    /// Never called: there are no byte tables without x86_64.
    ///
    /// # Safety
    /// None needed.
    #[cfg(not(target_arch = "x86_64"))]
    pub unsafe fn scan(&self, _: &[u8], at: usize, _: usize, _: &mut impl FnMut(usize)) -> usize {
        at
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn scan_vbmi<const WIDE: bool>(
        &self,
        hay: &[u8],
        mut at: usize,
        to: usize,
        candidate: &mut impl FnMut(usize),
    ) -> usize {
        use std::arch::x86_64::*;
        let sets = if WIDE { 2 } else { 1 };
        // Per set and offset: the table's entries 0..64 and 64..128.
        let mut tables = [[_mm512_setzero_si512(); 2 * WIDTH]; 2];
        for (set, loaded) in tables.iter_mut().enumerate().take(sets) {
            for (i, table) in self.tables[set].iter().enumerate() {
                let (low, high) = table.split_at(64);
                loaded[2 * i] = load(low.first_chunk().expect("64 entries"));
                loaded[2 * i + 1] = load(high.first_chunk().expect("64 entries"));
            }
        }
        while at + STEP <= to && at + STEP_READ <= hay.len() {
            let mut pass = [_mm512_set1_epi8(-1); 2];
            for i in 0..WIDTH {
                let bytes = hay[at + i..]
                    .first_chunk::<STEP>()
                    .expect("the loop condition leaves STEP_READ bytes");
                let v = load(bytes);
                for set in 0..sets {
                    let t = &tables[set];
                    // Bit 6 of each byte picks the table half, bits 0-5 the
                    // entry; bit 7 is ignored.
                    let allowed = _mm512_permutex2var_epi8(t[2 * i], v, t[2 * i + 1]);
                    pass[set] = _mm512_and_si512(pass[set], allowed);
                }
            }
            let pass = if WIDE {
                _mm512_or_si512(pass[0], pass[1])
            } else {
                pass[0]
            };
            let mut bits = _mm512_test_epi8_mask(pass, pass);
            while bits != 0 {
                candidate(at + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
            at += STEP;
        }
        at
    }

    /// What the step at `at` lets through, one position at a time: the
    /// model the AVX-512 code is tested against.
    #[cfg(test)]
    pub fn step_model(&self, hay: &[u8], at: usize) -> u64 {
        let sets = if self.wide { 2 } else { 1 };
        let mut bits = 0;
        for j in 0..STEP {
            let mut any = 0u8;
            for set in &self.tables[..sets] {
                let mut pass = 0xFF;
                for (i, table) in set.iter().enumerate() {
                    pass &= table[usize::from(hay[at + j + i] & 0x7F)];
                }
                any |= pass;
            }
            bits |= u64::from(any != 0) << j;
        }
        bits
    }
}

/// Whether this CPU has AVX-512 with byte permutes (F, BW and VBMI);
/// detected once, then cached by std.
pub(super) fn avx512_vbmi() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vbmi")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A 64-byte unaligned load.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx512f")]
fn load(bytes: &[u8; 64]) -> std::arch::x86_64::__m512i {
    // SAFETY: `bytes` is 64 readable bytes, the width of the load, and an
    // unaligned load has no alignment requirement.
    unsafe { std::arch::x86_64::_mm512_loadu_si512(bytes.as_ptr().cast()) }
}

/// The table entries of the bytes of `set` (a byte's low seven bits).
fn entries_of(set: ByteSet) -> u128 {
    if set == ByteSet::ALL {
        return u128::MAX;
    }
    set.bytes().fold(0, |entries, b| entries | 1 << (b & 0x7F))
}

/// One bucket's allowed bytes at each offset, as sets of table entries.
#[derive(Clone, Copy, Default)]
struct Entries([u128; WIDTH]);

impl Entries {
    /// Those of one beginning.
    fn of(beginning: &Beginning) -> Entries {
        Entries(beginning.sets.map(entries_of))
    }

    /// Both buckets' entries.
    fn or(mut self, other: &Entries) -> Entries {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
        self
    }

    /// The estimated share of positions the bucket lets through.
    fn pass_rate(&self, freq: &[f64; 128]) -> f64 {
        let mut rate = 1.0;
        for &set in &self.0 {
            if set == u128::MAX {
                continue; // anything: a factor of 1
            }
            let (mut sum, mut bits) = (0.0, set);
            while bits != 0 {
                sum += freq[bits.trailing_zeros() as usize];
                bits &= bits - 1;
            }
            rate *= sum;
        }
        rate
    }
}

/// Puts the beginnings into buckets, each where it adds least to the
/// estimated share of positions passing (the commonest first): into eight
/// when that lets through at most twice what sixteen would (or under 0.1%
/// of positions), else sixteen. Deterministic: ties go to the lower bucket.
fn assign(beginnings: &[Beginning], folded: &[f64; 256]) -> Vec<Vec<Beginning>> {
    // A table entry's share: its two bytes (bit 7 clear and set), each
    // half of its folded byte's share (the other half is the other case).
    let mut freq = [0.0; 128];
    for (e, f) in freq.iter_mut().enumerate() {
        *f = (folded[e | 0x20] + folded[e | 0xA0]) / 2.0;
    }
    let mut order: Vec<(f64, Beginning, Entries)> = beginnings
        .iter()
        .map(|b| {
            let own = Entries::of(b);
            (own.pass_rate(&freq), *b, own)
        })
        .collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let classes = beginnings.iter().filter(|b| b.class).count();
    let fill = |count: usize| {
        let mut buckets = vec![Vec::new(); BUCKETS];
        let mut entries = vec![Entries::default(); count];
        let mut rates = vec![0.0f64; count];
        for (_, beginning, own) in &order {
            let mut best = (f64::INFINITY, 0, Entries::default());
            for k in beginning.buckets(count, classes) {
                let with = entries[k].or(own);
                let added = with.pass_rate(&freq) - rates[k];
                if added < best.0 {
                    best = (added, k, with);
                }
            }
            let (added, k, with) = best;
            rates[k] += added;
            entries[k] = with;
            buckets[k].push(*beginning);
        }
        (buckets, rates.iter().sum::<f64>())
    };
    let (eight, narrow) = fill(8);
    if narrow <= 0.001 {
        return eight;
    }
    let (sixteen, wide) = fill(BUCKETS);
    if narrow <= 2.0 * wide {
        eight
    } else {
        sixteen
    }
}

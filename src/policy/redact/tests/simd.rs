//! The prefilter's SIMD first stage (the fingerprint) finds exactly the
//! keywords the scalar sieve finds alone.

use super::streaming::atoms;
use super::*;
use proptest::prelude::*;

/// The built-in set with the sieve alone.
fn scalar_defaults() -> &'static Redactor {
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(|| {
        let mut r = Redactor::compile(true, &[]).expect("built-in rules compile");
        if let Some(k) = &mut r.keywords {
            k.drop_fingerprint();
        }
        r
    })
}

/// The built-in set with the fingerprint's AVX2 steps alone (no AVX-512).
fn avx2_defaults() -> &'static Redactor {
    static R: OnceLock<Redactor> = OnceLock::new();
    R.get_or_init(|| {
        let mut r = Redactor::compile(true, &[]).expect("built-in rules compile");
        if let Some(k) = &mut r.keywords {
            k.drop_vbmi();
        }
        r
    })
}

/// The hits in position order: `scan` keeps each rule's hits in order, but
/// may report a class prefix (see `prefix`) after a later keyword.
fn keyword_hits(r: &Redactor, hay: &[u8], from: usize, to: usize) -> Vec<(usize, Vec<u32>)> {
    let mut hits = Vec::new();
    if let Some(k) = &r.keywords {
        k.scan(hay, from, to, |at, rules| hits.push((at, rules.to_vec())));
    }
    hits.sort_by_key(|h| h.0);
    hits
}

/// Bytes that make keyword beginnings, near misses (the same letters with
/// bit 5 flipped: `_` and DEL, `@` and `` ` ``), and everything else.
fn hay() -> impl Strategy<Value = Vec<u8>> {
    let keywords: Vec<Vec<u8>> = default_rules()
        .into_iter()
        .flat_map(|r| r.keywords)
        .map(String::into_bytes)
        .collect();
    let piece = prop_oneof![
        (0..keywords.len(), any::<u64>()).prop_map(move |(i, case)| {
            let k = &keywords[i];
            // A random ASCII case per byte, and sometimes only a prefix.
            let len = if case & 1 == 0 {
                k.len()
            } else {
                1 + (case >> 1) as usize % k.len()
            };
            k[..len]
                .iter()
                .enumerate()
                .map(|(j, &b)| {
                    if case >> (j % 60 + 2) & 1 == 1 {
                        b.to_ascii_uppercase()
                    } else {
                        b
                    }
                })
                .collect::<Vec<u8>>()
        }),
        prop::collection::vec(any::<u8>(), 0..40),
        prop::collection::vec(
            prop::sample::select(b"_\x7f@`.nN/:-sSkK0 \nMODTjz9aF".to_vec()),
            0..12
        ),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|p| p.concat())
}

#[test]
fn the_fingerprint_runs_where_the_cpu_has_it() {
    let has = defaults()
        .keywords
        .as_ref()
        .is_some_and(|k| k.has_fingerprint());
    assert_eq!(has, fingerprint::avx2());
    assert!(!scalar_defaults()
        .keywords
        .as_ref()
        .unwrap()
        .has_fingerprint());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn simd_and_scalar_find_the_same_keywords(
        hay in hay(),
        from in any::<usize>(),
        len in any::<usize>(),
    ) {
        let from = from % (hay.len() + 1);
        let to = from + len % (hay.len() - from + 1);
        let simd = keyword_hits(defaults(), &hay, from, to);
        prop_assert_eq!(&simd, &keyword_hits(scalar_defaults(), &hay, from, to));
        prop_assert_eq!(&simd, &keyword_hits(avx2_defaults(), &hay, from, to));
        // And they are the keywords there: the automaton alone, unanchored.
        let mut exact = Vec::new();
        if let Some(k) = &defaults().keywords {
            k.scan_exact(&hay, from, to, |at, rules| exact.push((at, rules.to_vec())));
        }
        exact.sort_by_key(|h| h.0);
        prop_assert_eq!(simd, exact);
    }

    #[test]
    fn simd_and_scalar_redact_alike(
        picks in prop::collection::vec(0usize..26, 0..40),
        noise in prop::collection::vec("[a-z_ .:/=\\-]{0,50}", 0..40),
    ) {
        let atoms = atoms();
        let text: String = picks
            .iter()
            .zip(noise.iter().chain(std::iter::repeat(&String::new())))
            .map(|(&i, n)| format!("{}{n}", atoms[i % atoms.len()]))
            .collect();
        prop_assert_eq!(defaults().redact(&text), scalar_defaults().redact(&text));
        prop_assert_eq!(
            defaults().matching_rules(&text),
            scalar_defaults().matching_rules(&text)
        );
    }
}

/// The AVX-512 steps compute exactly what their model says, on random
/// bytes and on bytes made of the keywords' own (with bit 5 and bit 7
/// flipped: near misses and the non-ASCII bytes that share a table entry),
/// and every keyword beginning passes them.
#[test]
fn vbmi_steps_match_the_model() {
    use fingerprint::Fingerprint;
    use permute::{STEP as WIDE_STEP, STEP_READ as WIDE_STEP_READ};
    if !fingerprint::avx2() || !permute::avx512_vbmi() {
        return;
    }
    let sets: [&[&str]; 3] = [
        &["ghp_", "akia", "token"],
        &[
            "ghp_",
            "akia",
            "token",
            "secret",
            "://",
            "sk-ant-",
            "r8_",
            "ya29.",
            "xoxb-",
            "eyj",
            "hvs.",
            "passw",
            "ltai",
            "gocspx-",
            "dop_v1_",
            "whsec_",
            "sq0atp-",
            "shpat_",
            "hf_",
            "pplx-",
            "nvapi-",
            "cio",
            "rubygems_",
            "dckr_pat_",
            "sg.",
            "lin_api_",
            "nrak-",
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
        let bytes: Vec<&[u8]> = keywords.iter().map(|k| k.as_bytes()).collect();
        let fp = Fingerprint::new(&bytes).expect("few keywords fit");
        let tables = fp.byte_tables().expect("this CPU has AVX-512 VBMI");
        for k in keywords {
            for variant in [k.to_string(), k.to_ascii_uppercase()] {
                for at in [0, 7, 63] {
                    let mut hay = vec![b' '; WIDE_STEP_READ + 8];
                    hay[at..at + k.len()].copy_from_slice(variant.as_bytes());
                    assert_ne!(tables.step_model(&hay, 0) & (1 << at), 0, "{variant}");
                }
            }
        }
        let alphabet: Vec<u8> = keywords.concat().into_bytes();
        for round in 0..2000 {
            let hay: Vec<u8> = (0..WIDE_STEP_READ + 40)
                .map(|_| {
                    let r = next();
                    if round % 2 == 0 {
                        r as u8
                    } else {
                        let b = alphabet[(r >> 8) as usize % alphabet.len()];
                        b ^ (r as u8 & 0xA0)
                    }
                })
                .collect();
            for at in [0, 1, 5, 8, 40] {
                let mut got = 0u64;
                let stop = fp.scan(&hay, at, at + WIDE_STEP, |pos| got |= 1 << (pos - at));
                assert_eq!(stop, at + WIDE_STEP);
                assert_eq!(
                    got,
                    tables.step_model(&hay, at),
                    "{keywords:?} {hay:?} at {at}"
                );
            }
        }
    }
}

/// Keywords everywhere, at every alignment to the 32- and 64-byte steps.
#[test]
fn keywords_at_every_offset_are_found() {
    let keywords: Vec<String> = default_rules()
        .into_iter()
        .flat_map(|r| r.keywords)
        .collect();
    for k in &keywords {
        for offset in 0..72 {
            let text = format!(
                "{}{}{}",
                "x".repeat(offset),
                k.to_ascii_uppercase(),
                " y".repeat(40)
            );
            let simd = keyword_hits(defaults(), text.as_bytes(), 0, text.len());
            assert!(simd.iter().any(|(at, _)| *at == offset), "{k} at {offset}");
            assert_eq!(
                simd,
                keyword_hits(scalar_defaults(), text.as_bytes(), 0, text.len())
            );
        }
    }
}

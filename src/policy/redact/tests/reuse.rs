//! A redactor reuses the scanners of finished texts: what one text left in
//! a scanner (intervals, an open block, capture slots, a match's position)
//! must never change the next text's redaction.

use super::*;

/// Texts that leave different state behind: keyword windows, groups,
/// a block cut off at the end, a keywordless rule's match, nothing at all.
fn texts() -> Vec<String> {
    let ghp = format!("ghp_{}", gen(ALNUM, 36, 1));
    let akia = format!("AKIA{}", gen(UPPER_B32, 16, 2));
    let body: String = (0..4).map(|i| gen(B64, 64, i) + "\n").collect();
    let twilio = format!("SK{}", gen(HEX, 32, 3));
    vec![
        format!("é token {ghp}\nkey {akia} ü\npassword=hunter2hunter2\n{ghp}"),
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{body}"),
        "hello".to_string(),
        format!("sid {twilio} end"),
        format!("key: {ghp}"),
        "token: too short".to_string(),
        format!("-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----\nafter"),
        "result".to_string(),
        format!("{akia} {akia}"),
    ]
}

#[test]
fn a_reused_scanner_redacts_like_a_new_one() {
    let texts = texts();
    let fresh: Vec<String> = texts
        .iter()
        .map(|t| {
            let r = Redactor::compile(true, &[]).unwrap();
            r.redact(t).into_owned()
        })
        .collect();
    // Something was redacted and something was not, so the comparison means
    // something.
    assert!(fresh.iter().zip(&texts).any(|(f, t)| f != t));
    assert!(fresh.iter().zip(&texts).any(|(f, t)| f == t));
    let shared = Redactor::compile(true, &[]).unwrap();
    // Every order of two texts, then all of them twice, on one redactor.
    for (i, a) in texts.iter().enumerate() {
        for (j, b) in texts.iter().enumerate() {
            assert_eq!(shared.redact(a), fresh[i], "{a:?} after {b:?}");
            assert_eq!(shared.redact(b), fresh[j], "{b:?} after {a:?}");
        }
    }
    for _ in 0..2 {
        for (t, f) in texts.iter().zip(&fresh) {
            assert_eq!(shared.redact(t), *f);
        }
    }
}

/// Redacting from several threads at once (each takes its own scanner).
#[test]
fn scanners_are_not_shared_between_threads() {
    let texts = texts();
    let fresh: Vec<String> = texts
        .iter()
        .map(|t| defaults().redact(t).into_owned())
        .collect();
    let shared = Redactor::compile(true, &[]).unwrap();
    std::thread::scope(|s| {
        for k in 0..4 {
            let (texts, fresh, shared) = (&texts, &fresh, &shared);
            s.spawn(move || {
                for round in 0..50 {
                    let i = (round * 7 + k) % texts.len();
                    assert_eq!(shared.redact(&texts[i]), fresh[i]);
                }
            });
        }
    });
}

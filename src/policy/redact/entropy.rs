//! Shannon entropy of a candidate secret, gitleaks' measure of randomness.

/// Bits per character of `s`, over its characters (not bytes): 0 for a
/// repeated character, log2(n) for n distinct characters in equal shares.
pub fn shannon_entropy(s: &str) -> f64 {
    let mut counts: Vec<(char, u32)> = Vec::new();
    let mut total = 0u32;
    for c in s.chars() {
        total += 1;
        match counts.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => counts.push((c, 1)),
        }
    }
    if total == 0 {
        return 0.0;
    }
    let total = f64::from(total);
    counts
        .iter()
        .map(|&(_, n)| {
            let p = f64::from(n) / total;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::shannon_entropy;

    #[test]
    fn known_values() {
        assert_eq!(shannon_entropy(""), 0.0);
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("ab") - 1.0).abs() < 1e-9);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
        assert!((shannon_entropy("0123456789abcdef") - 4.0).abs() < 1e-9);
        // Characters, not bytes: two distinct characters.
        assert!((shannon_entropy("éa") - 1.0).abs() < 1e-9);
    }
}

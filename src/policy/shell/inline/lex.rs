//! The tokenizer: string literals (with their quoting and interpolation
//! rules per language), names, sigil variables, regular expressions and
//! punctuation. Anything it cannot tokenize is an error, which makes the
//! code unknown.

use super::{Lang, Tok};

/// Most tokens read from one piece of code; longer code is unknown.
const MAX_TOKENS: usize = 20_000;

/// Tokens of `code`, or why it cannot be read.
pub(super) fn lex(lang: Lang, code: &str) -> Result<Vec<Tok>, String> {
    let c: Vec<char> = code.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if toks.len() > MAX_TOKENS {
            return Err("code too long to read".into());
        }
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '\n' {
            toks.push(Tok::Newline);
            i += 1;
            continue;
        }
        if ch.is_whitespace() {
            i += 1;
            continue;
        }
        let hash_comment = matches!(lang, Lang::Python | Lang::Ruby | Lang::Perl | Lang::Php);
        let slash_comment = matches!(lang, Lang::Js | Lang::Php);
        if (ch == '#' && hash_comment) || (ch == '/' && next == Some('/') && slash_comment) {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if ch == '/' && next == Some('*') && slash_comment {
            i += 2;
            while i + 1 < c.len() && !(c[i] == '*' && c[i + 1] == '/') {
                i += 1;
            }
            i += 2;
            continue;
        }
        if ch == '/' && lang != Lang::Python && lang != Lang::Php && regex_position(&toks) {
            let (body, end) = delimited(&c, i, '/')?;
            i = regex_end(lang, &c, end, &body, false)?;
            toks.push(Tok::Other);
            continue;
        }
        if ch == '\'' || ch == '"' || ch == '`' {
            let (tok, end) = quoted(lang, &c, i, false, false)?;
            toks.push(tok);
            i = end;
            continue;
        }
        if ch.is_ascii_alphabetic() || ch == '_' || (ch == '$' && lang == Lang::Js) {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_' || c[i] == '$') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            if lang == Lang::Ruby && i < c.len() && matches!(c[i], '?' | '!') {
                i += 1;
            }
            let q = c.get(i).copied();
            // Python string prefixes: r'', b"", f'', rb'', ...
            if lang == Lang::Python && matches!(q, Some('\'' | '"')) {
                let lower = word.to_ascii_lowercase();
                if ["r", "b", "u", "f", "rb", "br", "fr", "rf"].contains(&lower.as_str()) {
                    let (tok, end) = quoted(lang, &c, i, lower.contains('r'), lower.contains('f'))?;
                    toks.push(tok);
                    i = end;
                    continue;
                }
            }
            if lang == Lang::Perl {
                if let Some(d) = q.filter(|d| is_delim(*d)) {
                    match word.as_str() {
                        "q" | "qq" | "qx" | "qw" => {
                            let (body, end) = delimited(&c, i, d)?;
                            i = end;
                            toks.push(match word.as_str() {
                                "q" => Tok::Str(Some(body)),
                                "qq" => Tok::Str(interpolation_free(lang, &body)),
                                "qx" => Tok::Shell(interpolation_free(lang, &body)),
                                _ => {
                                    Tok::Words(body.split_whitespace().map(String::from).collect())
                                }
                            });
                            continue;
                        }
                        "m" | "qr" | "s" | "y" | "tr" if !"([{<".contains(d) => {
                            let (body, mut end) = delimited(&c, i, d)?;
                            let mut all = body;
                            if matches!(word.as_str(), "s" | "y" | "tr") {
                                let (repl, after) = delimited(&c, end - 1, d)?;
                                all.push_str(&repl);
                                end = after;
                            }
                            i = regex_end(lang, &c, end, &all, word == "s")?;
                            toks.push(Tok::Other);
                            continue;
                        }
                        "m" | "qr" | "s" | "y" | "tr" => {
                            return Err("a regular expression with bracket delimiters".into())
                        }
                        _ => {}
                    }
                }
            }
            let sigil = lang == Lang::Php && start > 0 && c[start - 1] == '$';
            toks.push(if sigil { Tok::Var } else { Tok::Ident(word) });
            continue;
        }
        if matches!(lang, Lang::Perl | Lang::Php | Lang::Ruby) && matches!(ch, '$' | '@')
            || (lang == Lang::Perl && ch == '%' && next.is_some_and(|n| n.is_ascii_alphabetic()))
        {
            i += 1;
            if ch == '@' && lang == Lang::Ruby && c.get(i) == Some(&'@') {
                i += 1;
            }
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_' || c[i] == ':') {
                i += 1;
            }
            if i == start && i < c.len() {
                i += 1; // `$_`, `$0`, `$!`
            }
            toks.push(Tok::Var);
            continue;
        }
        if lang == Lang::Ruby && ch == '%' {
            if let Some(kind) = next.filter(|n| matches!(n, 'x' | 'q' | 'Q' | 'w' | 'W')) {
                if let Some(d) = c.get(i + 2).copied().filter(|d| is_delim(*d)) {
                    let (body, end) = delimited(&c, i + 2, d)?;
                    i = end;
                    toks.push(match kind {
                        'x' => Tok::Shell(interpolation_free(lang, &body)),
                        'q' => Tok::Str(Some(body)),
                        'Q' => Tok::Str(interpolation_free(lang, &body)),
                        _ => Tok::Words(body.split_whitespace().map(String::from).collect()),
                    });
                    continue;
                }
            }
        }
        if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.' || c[i] == '_') {
                i += 1;
            }
            toks.push(Tok::Other);
            continue;
        }
        // `.`, `::`, `->`, `?.` join a receiver to its member.
        let two: String = c[i..(i + 2).min(c.len())].iter().collect();
        if matches!(two.as_str(), "::" | "->" | "?.") {
            toks.push(Tok::Punct('.'));
            i += 2;
            continue;
        }
        if matches!(two.as_str(), "=>" | "==" | "!=" | "<=" | ">=" | "=~" | "!~") {
            toks.push(Tok::Punct(':'));
            i += 2;
            continue;
        }
        toks.push(Tok::Punct(ch));
        i += 1;
    }
    Ok(toks)
}

/// Where a `/` would start a regular expression rather than divide.
fn regex_position(toks: &[Tok]) -> bool {
    match toks.iter().rev().find(|t| **t != Tok::Newline) {
        None => true,
        Some(Tok::Ident(w)) => matches!(
            w.as_str(),
            "return"
                | "typeof"
                | "in"
                | "of"
                | "split"
                | "grep"
                | "if"
                | "unless"
                | "and"
                | "or"
                | "not"
                | "when"
        ),
        Some(Tok::Punct(p)) => !matches!(p, ')' | ']' | '}'),
        Some(_) => false,
    }
}

/// Skips a regular expression's flags after `c[end]`; code inside the
/// pattern (`(?{ })`, `#{}`) or Perl's `s///e` (the replacement is code)
/// cannot be read.
fn regex_end(
    lang: Lang,
    c: &[char],
    mut end: usize,
    body: &str,
    subst: bool,
) -> Result<usize, String> {
    let flags_start = end;
    while end < c.len() && c[end].is_ascii_alphabetic() {
        end += 1;
    }
    let flags: String = c[flags_start..end].iter().collect();
    let code = body.contains("(?{")
        || body.contains("(??{")
        || (lang == Lang::Ruby && body.contains("#{"))
        || (subst && flags.contains('e'));
    if code {
        return Err("code inside a regular expression".into());
    }
    Ok(end)
}

fn is_delim(c: char) -> bool {
    matches!(
        c,
        '(' | '[' | '{' | '<' | '|' | '!' | '/' | '#' | '\'' | '"' | '~' | ','
    )
}

/// A Perl/Ruby delimited body starting at `c[at]` (the opening delimiter),
/// with nesting for brackets; returns the body and the index after it.
fn delimited(c: &[char], at: usize, open: char) -> Result<(String, usize), String> {
    let close = match open {
        '(' => ')',
        '[' => ']',
        '{' => '}',
        '<' => '>',
        d => d,
    };
    let mut depth = 0;
    let mut i = at + 1;
    let mut body = String::new();
    while i < c.len() {
        let ch = c[i];
        if ch == '\\' && i + 1 < c.len() {
            body.push(ch);
            body.push(c[i + 1]);
            i += 2;
            continue;
        }
        if ch == close && depth == 0 {
            return Ok((body, i + 1));
        }
        if open != close {
            if ch == open {
                depth += 1;
            } else if ch == close {
                depth -= 1;
            }
        }
        body.push(ch);
        i += 1;
    }
    Err("a quoted string that does not end".into())
}

/// The body when it has no interpolation or backslash; None otherwise.
fn interpolation_free(lang: Lang, body: &str) -> Option<String> {
    let interp = match lang {
        Lang::Ruby => body.contains("#{"),
        Lang::Perl => body.contains(['$', '@']),
        Lang::Php => body.contains('$'),
        Lang::Js => body.contains("${"),
        Lang::Python => false,
    };
    (!interp && !body.contains('\\')).then(|| body.to_string())
}

/// A quoted string at `c[at]`; returns the token and the index after it.
fn quoted(lang: Lang, c: &[char], at: usize, raw: bool, fmt: bool) -> Result<(Tok, usize), String> {
    let q = c[at];
    let triple = lang == Lang::Python && c.get(at + 1) == Some(&q) && c.get(at + 2) == Some(&q);
    let mut i = at + if triple { 3 } else { 1 };
    let mut value = String::new();
    let mut literal = true;
    // Single quotes in Ruby, Perl and PHP only know `\\` and `\'`.
    let plain_single = q == '\'' && matches!(lang, Lang::Ruby | Lang::Perl | Lang::Php);
    loop {
        let Some(&ch) = c.get(i) else {
            return Err("a quoted string that does not end".into());
        };
        if ch == q && (!triple || (c.get(i + 1) == Some(&q) && c.get(i + 2) == Some(&q))) {
            i += if triple { 3 } else { 1 };
            break;
        }
        if ch == '\\' {
            let n = c.get(i + 1).copied().unwrap_or('\\');
            i += 2;
            if raw {
                value.push('\\');
                value.push(n);
                continue;
            }
            match n {
                '\\' | '\'' | '"' | '`' => value.push(n),
                _ if plain_single => {
                    value.push('\\');
                    value.push(n);
                }
                'n' => value.push('\n'),
                't' => value.push('\t'),
                '\n' => {}
                '$' if q != '\'' => value.push('$'),
                // `\x72`, `\u0072`, `\162`: text written to be hidden.
                _ => literal = false,
            }
            continue;
        }
        let can_interpolate = match lang {
            Lang::Python => fmt,
            Lang::Js => q == '`',
            Lang::Ruby | Lang::Perl | Lang::Php => q != '\'',
        };
        if can_interpolate {
            let n = c.get(i + 1).copied();
            let interp = match (lang, q) {
                (Lang::Python, _) => fmt && ch == '{' && n != Some('{'),
                (Lang::Js, '`') => ch == '$' && n == Some('{'),
                (Lang::Js, _) => false,
                (Lang::Ruby, _) => ch == '#' && n == Some('{'),
                (Lang::Perl, _) => matches!(ch, '$' | '@') && n.is_some_and(|n| !n.is_whitespace()),
                (Lang::Php, _) => {
                    ch == '$' && n.is_some_and(|n| n.is_ascii_alphabetic() || n == '{' || n == '_')
                }
            };
            if interp {
                literal = false;
            }
        }
        value.push(ch);
        i += 1;
    }
    let value = literal.then_some(value);
    let shell_backtick = q == '`' && matches!(lang, Lang::Ruby | Lang::Perl | Lang::Php);
    Ok((
        if shell_backtick {
            Tok::Shell(value)
        } else {
            Tok::Str(value)
        },
        i,
    ))
}

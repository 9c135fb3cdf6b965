//! Imports, `require`, `use` and `include`: a module outside the known
//! list runs code the reader cannot see.

use super::tables::known_module;
use super::{Lang, Reading, Tok};

/// Imports: Python `import a, b` / `from a import b`, JS `import ... from
/// 'm'`, Ruby `require 'm'`, Perl `use M` / `require M`, PHP
/// `include`/`require` (always unknown: they run a file).
pub(super) fn imports(lang: Lang, toks: &[Tok], out: &mut Reading) {
    let push = |out: &mut Reading, why: String| {
        if !out.unknown.contains(&why) {
            out.unknown.push(why);
        }
    };
    for (k, tok) in toks.iter().enumerate() {
        let Tok::Ident(word) = tok else { continue };
        let after_dot = k > 0 && toks[k - 1] == Tok::Punct('.');
        if after_dot {
            continue;
        }
        let next = toks.get(k + 1);
        match (lang, word.as_str()) {
            (Lang::Python, "import" | "from") => {
                // The module names up to the end of the statement.
                if word == "import"
                    && k >= 2
                    && matches!(&toks[..k], [.., Tok::Ident(f), Tok::Ident(_)] if f == "from")
                {
                    continue; // `from M import NAMES`: M was read
                }
                let mut expect_module = true;
                for t in &toks[k + 1..] {
                    match t {
                        Tok::Newline | Tok::Punct(';') => break,
                        Tok::Ident(m) if expect_module => {
                            if !known_module(lang, m) {
                                push(out, format!("import of `{m}`"));
                            }
                            expect_module = false;
                        }
                        Tok::Ident(w) if w == "import" => break,
                        Tok::Punct(',') => expect_module = true,
                        Tok::Ident(w) if w == "as" => {}
                        Tok::Punct('.') | Tok::Ident(_) | Tok::Punct('(' | ')') => {}
                        _ => {
                            push(out, "an import this reading does not know".into());
                            break;
                        }
                    }
                }
            }
            (Lang::Js, "import") => match next {
                Some(Tok::Punct('(')) => {} // a call: judged in `call`
                _ => {
                    let module = toks[k + 1..].iter().find_map(|t| match t {
                        Tok::Str(m) => Some(m.clone()),
                        Tok::Punct(';') | Tok::Newline => Some(None),
                        _ => None,
                    });
                    match module.flatten() {
                        Some(m) if known_module(lang, &m) => {}
                        Some(m) => push(out, format!("import of `{m}`")),
                        None => push(out, "an import this reading does not know".into()),
                    }
                }
            },
            (Lang::Ruby, "require" | "require_relative" | "load") => {
                let module = match next {
                    Some(Tok::Str(m)) => m.clone(),
                    Some(Tok::Punct('(')) => match toks.get(k + 2) {
                        Some(Tok::Str(m)) => m.clone(),
                        _ => None,
                    },
                    _ => None,
                };
                match module {
                    Some(m) if word == "require" && known_module(lang, &m) => {}
                    Some(m) => push(out, format!("{word} of `{m}`")),
                    None => push(out, format!("{word} of a computed name")),
                }
            }
            (Lang::Perl, "use" | "no" | "require" | "do") => {
                let mut name = String::new();
                for t in &toks[k + 1..] {
                    match t {
                        Tok::Ident(w) => name.push_str(w),
                        Tok::Punct('.') => name.push_str("::"),
                        _ => break,
                    }
                }
                if name.is_empty() && matches!(next, Some(Tok::Other)) && word != "do" {
                    continue; // `use 5.010;`
                }
                if word == "do" && matches!(next, Some(Tok::Punct('{'))) {
                    continue; // a block
                }
                if !known_module(lang, &name) {
                    push(out, format!("{word} of `{name}`"));
                }
            }
            (Lang::Php, "include" | "include_once" | "require" | "require_once" | "eval") => {
                push(out, format!("`{word}`"));
            }
            _ => {}
        }
    }
}

//! Code given to an interpreter (`python -c`, `node -e`, `ruby -e`,
//! `perl -e`, `php -r`, or a script piped or here-doc'd into one): a compact
//! tokenizer for the string literals, names and calls of Python, JavaScript,
//! Ruby, Perl and PHP finds what the code does outside the process.
//!
//! - Shell commands in literal strings passed to `os.system`, `subprocess.*`,
//!   `child_process.exec*`/`spawn*`, `system`, backticks, `%x`, `qx`,
//!   `shell_exec`, `passthru`, ... become [`Effect::Shell`] / [`Effect::Argv`].
//! - File APIs with literal paths become their shell equivalents
//!   (`shutil.rmtree(p)` is `rm -rf p`, `open(p, 'w')` writes p).
//! - Every other call, import, definition or construct the tokenizer cannot
//!   read is listed in [`Reading::unknown`]; the policy judges those with
//!   `commands.inline_code`. docs/policy-language.md has the full table.
//!
//! It is not a parser: it reads tokens, so it can only fail towards
//! "unknown" (a call it does not know), never hide a call it sees.

mod imports;
mod lex;
mod tables;

use self::imports::imports;
use self::lex::lex;
use self::tables::{api, harmless, keyword, known_module, path_method, Api};
use crate::policy::Access;

/// An interpreter language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Lang {
    Python,
    Js,
    Ruby,
    Perl,
    Php,
}

/// Something the code does outside the interpreter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Effect {
    /// A shell command string (analyzed like `bash -c`).
    Shell(String),
    /// A program with its arguments, run without a shell.
    Argv(Vec<String>),
    /// A file read or written.
    File(String, Access),
}

/// What reading one piece of code found.
#[derive(Debug, Default)]
pub(super) struct Reading {
    pub(super) effects: Vec<Effect>,
    /// What could not be accounted for, one reason each.
    pub(super) unknown: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// A sigil variable (`$x`, `@x`).
    Var,
    /// A string literal; None when it interpolates or uses escapes that
    /// hide text.
    Str(Option<String>),
    /// Backticks, `%x()`, `qx()`: a shell command.
    Shell(Option<String>),
    /// `qw(a b)`, `%w(a b)`.
    Words(Vec<String>),
    Punct(char),
    Newline,
    Other,
}

/// Reads `code` written in `lang`.
pub(super) fn read(lang: Lang, code: &str) -> Reading {
    let mut out = Reading::default();
    let toks = match lex(lang, code) {
        Ok(t) => t,
        Err(e) => {
            out.unknown.push(e);
            return out;
        }
    };
    let sig: Vec<&Tok> = toks.iter().filter(|t| **t != Tok::Newline).collect();
    calls(lang, &toks, &sig, &mut out);
    out
}

/// One call's arguments: each a slice of tokens.
type Args<'t> = Vec<&'t [&'t Tok]>;

fn lit<'t>(arg: Option<&&'t [&'t Tok]>) -> Option<&'t str> {
    match arg {
        Some([Tok::Str(Some(s))]) => Some(s),
        _ => None,
    }
}

/// A list of literal strings: `["rm", "-rf", "x"]`, `qw(rm -rf x)`.
fn lit_list(arg: Option<&&[&Tok]>) -> Option<Vec<String>> {
    let arg = arg?;
    if let [Tok::Words(w)] = arg {
        return Some(w.clone());
    }
    let inner = match (arg.first(), arg.last()) {
        (Some(Tok::Punct('[' | '(')), Some(Tok::Punct(']' | ')'))) => &arg[1..arg.len() - 1],
        _ => return None,
    };
    let mut out = Vec::new();
    for (k, t) in inner.iter().enumerate() {
        match (k % 2, t) {
            (0, Tok::Str(Some(s))) => out.push(s.clone()),
            (1, Tok::Punct(',')) => {}
            _ => return None,
        }
    }
    Some(out)
}

/// Splits `sig[open+1..close]` at top-level commas.
fn split_args<'t>(sig: &'t [&'t Tok], open: usize, close: usize) -> Args<'t> {
    let mut args = Vec::new();
    let mut depth = 0i32;
    let mut start = open + 1;
    for k in open + 1..close {
        match sig[k] {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => depth -= 1,
            Tok::Punct(',') if depth == 0 => {
                args.push(&sig[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    if start < close {
        args.push(&sig[start..close]);
    }
    args
}

/// The index of the bracket closing `sig[open]`.
fn matching(sig: &[&Tok], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, t) in sig.iter().enumerate().skip(open) {
        match t {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The index of the bracket opening the one that `sig[close]` closes.
fn opening(sig: &[&Tok], close: usize) -> Option<usize> {
    let mut depth = 0i32;
    for k in (0..=close).rev() {
        match sig[k] {
            Tok::Punct(')' | ']' | '}') => depth += 1,
            Tok::Punct('(' | '[' | '{') => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Finds every call, import and shell string in the tokens.
fn calls(lang: Lang, toks: &[Tok], sig: &[&Tok], out: &mut Reading) {
    let mut declared: Vec<String> = Vec::new();
    let unknown = |out: &mut Reading, why: String| {
        if !out.unknown.contains(&why) {
            out.unknown.push(why);
        }
    };
    // Imports read line by line (Python) or by keyword.
    imports(lang, toks, out);
    let mut skip_to = 0;
    for (k, tok) in sig.iter().enumerate() {
        if k < skip_to {
            continue;
        }
        if lang == Lang::Perl
            && matches!(tok, Tok::Ident(w) if matches!(w.as_str(), "use" | "no" | "require"))
        {
            // The module and its import list, read by `imports`.
            skip_to = (k..sig.len())
                .find(|&e| sig[e] == &Tok::Punct(';'))
                .unwrap_or(sig.len());
            continue;
        }
        let prev = k.checked_sub(1).map(|p| sig[p]);
        let next = sig.get(k + 1).copied();
        match tok {
            Tok::Shell(Some(cmd)) => out.effects.push(Effect::Shell(cmd.clone())),
            Tok::Shell(None) => unknown(
                out,
                "a command in backticks that is not a literal string".into(),
            ),
            Tok::Punct('(') => match prev {
                Some(Tok::Ident(_)) | None => {}
                Some(Tok::Punct(')' | ']')) => unknown(out, "a call of a computed function".into()),
                Some(Tok::Var) if lang != Lang::Perl => {
                    unknown(out, "a call through a variable".into())
                }
                _ => {}
            },
            Tok::Punct('@') if lang == Lang::Python && matches!(next, Some(Tok::Ident(_))) => {
                unknown(out, "a decorator".into())
            }
            Tok::Ident(name) => {
                let after_dot = matches!(prev, Some(Tok::Punct('.')));
                let called = matches!(next, Some(Tok::Punct('(')))
                    || (lang == Lang::Js
                        && matches!(next, Some(Tok::Str(_)))
                        && !keyword(lang, name));
                if !after_dot && keyword(lang, name) {
                    continue;
                }
                let import_word = match lang {
                    Lang::Python => matches!(name.as_str(), "import" | "from"),
                    Lang::Ruby => matches!(name.as_str(), "require" | "require_relative" | "load"),
                    Lang::Js | Lang::Perl | Lang::Php => false,
                };
                if import_word && !after_dot {
                    continue; // read by `imports`
                }
                if matches!(prev, Some(Tok::Ident(p)) if matches!(p.as_str(), "def" | "class" | "sub" | "function" | "module"))
                {
                    unknown(out, format!("a definition of `{name}`"));
                    continue;
                }
                if matches!(
                    name.as_str(),
                    "def" | "class" | "sub" | "function" | "module"
                ) {
                    continue;
                }
                // Assignments and block parameters name local variables.
                if matches!(next, Some(Tok::Punct('='))) || matches!(prev, Some(Tok::Punct('|'))) {
                    declared.push(name.clone());
                }
                if called {
                    call(lang, sig, k, name, out);
                    continue;
                }
                // Ruby and Perl call without parentheses.
                if matches!(lang, Lang::Ruby | Lang::Perl) {
                    if let Some(api) = api(lang, name) {
                        let end = (k + 1..sig.len())
                            .find(|&e| matches!(sig[e], Tok::Punct(';' | '}')))
                            .unwrap_or(sig.len());
                        let args = if k + 1 < end {
                            split_args(sig, k, end)
                        } else {
                            Vec::new()
                        };
                        apply(lang, name, api, &args, out);
                        continue;
                    }
                    let receiver = matches!(next, Some(Tok::Punct('.')));
                    let constant = name.starts_with(|c: char| c.is_ascii_uppercase());
                    if !receiver && !constant && !harmless(lang, name) && !declared.contains(name) {
                        if lang == Lang::Perl
                            && matches!(next, Some(Tok::Punct('}')))
                            && matches!(prev, Some(Tok::Punct('{')))
                        {
                            continue; // a hash key: `$h{key}`
                        }
                        unknown(out, format!("`{name}`"));
                    }
                }
            }
            _ => {}
        }
    }
}

/// One call `sig[k](...)`.
fn call(lang: Lang, sig: &[&Tok], k: usize, name: &str, out: &mut Reading) {
    let (open, close) = match sig.get(k + 1) {
        Some(Tok::Punct('(')) => match matching(sig, k + 1) {
            Some(close) => (k + 1, close),
            None => {
                out.unknown.push("brackets that do not close".into());
                return;
            }
        },
        // A JS tagged template: `` execSync`...` ``.
        _ => {
            out.unknown.push(format!("`{name}` called with a template"));
            return;
        }
    };
    let args = split_args(sig, open, close);
    let prev = k.checked_sub(1).map(|p| sig[p]);
    let receiver = receiver_path(lang, sig, k);
    if lang == Lang::Js && (name == "require" || name == "import") {
        match lit(args.first()) {
            Some(m) if known_module(lang, m) => {}
            Some(m) => out.unknown.push(format!("require of `{m}`")),
            None => out.unknown.push("require of a computed name".into()),
        }
        return;
    }
    if matches!(lang, Lang::Python) && matches!(name, "Path" | "PurePath" | "PosixPath") {
        if args.len() != 1 || lit(args.first()).is_none() {
            out.unknown
                .push(format!("`{name}` of a path that is not a literal string"));
        }
        return;
    }
    if lang == Lang::Js
        && matches!(prev, Some(Tok::Ident(p)) if p == "new")
        && !harmless(lang, name)
    {
        out.unknown.push(format!("`new {name}`"));
        return;
    }
    if let Some(path) = receiver {
        if let Some(api) = path_method(name) {
            let mut with_path: Vec<&[&Tok]> = Vec::new();
            let holder = [Tok::Str(Some(path))];
            let holder_ref: Vec<&Tok> = holder.iter().collect();
            with_path.push(&holder_ref);
            with_path.extend(args.iter().copied());
            apply(lang, name, api, &with_path, out);
            return;
        }
    }
    if let Some(api) = api(lang, name) {
        apply(lang, name, api, &args, out);
        return;
    }
    if !harmless(lang, name) {
        out.unknown.push(format!("`{name}(…)`"));
    }
}

/// `Path('x').method(...)`: the literal path the method is called on.
fn receiver_path(lang: Lang, sig: &[&Tok], k: usize) -> Option<String> {
    if lang != Lang::Python
        || k < 3
        || sig[k - 1] != &Tok::Punct('.')
        || sig[k - 2] != &Tok::Punct(')')
    {
        return None;
    }
    let open = opening(sig, k - 2)?;
    match (open.checked_sub(1).map(|p| sig[p]), &sig[open + 1..k - 2]) {
        (Some(Tok::Ident(p)), [Tok::Str(Some(path))])
            if matches!(p.as_str(), "Path" | "PurePath" | "PosixPath") =>
        {
            Some(path.clone())
        }
        _ => None,
    }
}

/// Records what a recognized API does with `args`.
fn apply(lang: Lang, name: &str, api: Api, args: &[&[&Tok]], out: &mut Reading) {
    let not_literal = |out: &mut Reading| {
        out.unknown.push(format!(
            "`{name}` with an argument that is not a literal string"
        ))
    };
    let first = args.first();
    match api {
        Api::Shell => {
            if let Some(cmd) = lit(first) {
                out.effects.push(Effect::Shell(cmd.to_string()));
            } else if let Some(argv) = lit_list(first).filter(|a| !a.is_empty()) {
                out.effects.push(Effect::Argv(argv));
            } else {
                not_literal(out);
            }
        }
        Api::Argv => {
            if let Some(argv) = lit_list(first).filter(|a| !a.is_empty()) {
                out.effects.push(Effect::Argv(argv));
                return;
            }
            let words: Option<Vec<String>> = args
                .iter()
                .map(|a| lit(Some(a)).map(String::from))
                .collect();
            match words {
                Some(w) if w.len() == 1 => out.effects.push(Effect::Shell(w[0].clone())),
                Some(w) if !w.is_empty() => out.effects.push(Effect::Argv(w)),
                _ => not_literal(out),
            }
        }
        Api::ProgramList => {
            let Some(program) = lit(first) else {
                return not_literal(out);
            };
            let mut argv = vec![program.to_string()];
            if let Some(second) = args.get(1) {
                if matches!(second.first(), Some(Tok::Punct('['))) {
                    match lit_list(Some(second)) {
                        Some(list) => argv.extend(list),
                        None => return not_literal(out),
                    }
                }
            }
            if argv.len() == 1 && program.contains(char::is_whitespace) {
                out.effects.push(Effect::Shell(program.to_string()));
            } else {
                out.effects.push(Effect::Argv(argv));
            }
        }
        Api::RmRf | Api::Rm | Api::Rmdir | Api::Mkdir => {
            let (program, flags): (&str, &[&str]) = match api {
                Api::RmRf => ("rm", &["-rf"]),
                Api::Rm => ("rm", &[]),
                Api::Rmdir => ("rmdir", &[]),
                _ => ("mkdir", &[]),
            };
            // Every argument that names a path (Perl and Ruby take several;
            // Python and JS take one, then options).
            let take = if matches!(lang, Lang::Perl | Lang::Ruby) {
                args.len()
            } else {
                1
            };
            let mut paths = Vec::new();
            for arg in args.iter().take(take) {
                if let Some(list) = lit_list(Some(arg)) {
                    paths.extend(list);
                } else if let Some(p) = lit(Some(arg)) {
                    paths.push(p.to_string());
                } else if matches!(lang, Lang::Perl | Lang::Ruby) && !paths.is_empty() {
                    break; // trailing options
                } else {
                    return not_literal(out);
                }
            }
            if paths.is_empty() {
                return not_literal(out);
            }
            let mut argv = vec![program.to_string()];
            argv.extend(flags.iter().map(|f| f.to_string()));
            argv.push("--".into());
            argv.extend(paths);
            out.effects.push(Effect::Argv(argv));
        }
        Api::Move | Api::Copy => {
            let (Some(a), Some(b)) = (lit(first), lit(args.get(1))) else {
                return not_literal(out);
            };
            let recursive = matches!(name, "copytree" | "cp_r" | "cpSync");
            let mut argv = vec![if matches!(api, Api::Move) { "mv" } else { "cp" }.to_string()];
            if recursive {
                argv.push("-r".into());
            }
            argv.extend(["--".to_string(), a.to_string(), b.to_string()]);
            out.effects.push(Effect::Argv(argv));
        }
        Api::FsRm => {
            let Some(p) = lit(first) else {
                return not_literal(out);
            };
            let recursive = args.iter().skip(1).any(|a| {
                a.windows(3).any(|w| {
                    matches!(w, [Tok::Ident(r), Tok::Punct(':'), Tok::Ident(t)] if r == "recursive" && t == "true")
                })
            }) || name.starts_with("rmdir") && args.len() > 1;
            let mut argv = vec!["rm".to_string()];
            if recursive {
                argv.push("-rf".into());
            }
            argv.extend(["--".to_string(), p.to_string()]);
            out.effects.push(Effect::Argv(argv));
        }
        Api::Write | Api::Read => {
            let Some(p) = lit(first) else {
                return not_literal(out);
            };
            let access = if matches!(api, Api::Write) {
                Access::Write
            } else {
                Access::Read
            };
            out.effects.push(Effect::File(p.to_string(), access));
        }
        Api::Open => {
            let Some(p) = lit(first) else {
                return not_literal(out);
            };
            let mut mode = String::new();
            for arg in args.iter().skip(1) {
                match arg {
                    [Tok::Str(Some(m))] => mode.push_str(m),
                    [Tok::Ident(_), Tok::Punct('='), Tok::Str(Some(m))] => mode.push_str(m),
                    [Tok::Ident(_), Tok::Punct('='), ..] => {}
                    _ if mode.is_empty() => return not_literal(out),
                    _ => {}
                }
            }
            let writes = mode.contains(['w', 'a', 'x', '+']);
            let access = if writes { Access::Write } else { Access::Read };
            out.effects.push(Effect::File(p.to_string(), access));
        }
        Api::PerlOpen => perl_open(args, out),
    }
}

/// Perl's `open(FH, MODE, PATH)` and two-argument `open(FH, "<PATH")`.
fn perl_open(args: &[&[&Tok]], out: &mut Reading) {
    let fail = |out: &mut Reading| {
        out.unknown
            .push("`open` with a mode or path that is not a literal string".into())
    };
    let (mode, rest): (String, Vec<String>) = match args.len() {
        2 => {
            let Some(spec) = lit(args.get(1)) else {
                return fail(out);
            };
            let spec = spec.trim();
            if let Some(cmd) = spec.strip_suffix('|') {
                return out.effects.push(Effect::Shell(cmd.trim().to_string()));
            }
            if let Some(cmd) = spec.strip_prefix('|') {
                return out.effects.push(Effect::Shell(cmd.trim().to_string()));
            }
            let split = spec
                .find(|c: char| !matches!(c, '<' | '>' | '+'))
                .unwrap_or(spec.len());
            (
                spec[..split].to_string(),
                vec![spec[split..].trim().to_string()],
            )
        }
        n if n >= 3 => {
            let Some(mode) = lit(args.get(1)) else {
                return fail(out);
            };
            let rest: Option<Vec<String>> = args[2..]
                .iter()
                .map(|a| lit(Some(a)).map(String::from))
                .collect();
            let Some(rest) = rest else { return fail(out) };
            (mode.trim().to_string(), rest)
        }
        _ => return fail(out),
    };
    if mode.contains('|') {
        match rest.len() {
            1 => out.effects.push(Effect::Shell(rest[0].clone())),
            _ => out.effects.push(Effect::Argv(rest)),
        }
        return;
    }
    let Some(path) = rest.first().filter(|p| !p.is_empty()) else {
        return fail(out);
    };
    let access = if mode.contains(['>', '+']) {
        Access::Write
    } else {
        Access::Read
    };
    out.effects.push(Effect::File(path.clone(), access));
}

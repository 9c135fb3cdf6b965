//! Which words of an interpreter invocation hold its program
//! (`python -c CODE`, `node -e CODE`, `perl -ne CODE`), or whether it reads
//! its program from stdin.

use super::inline::Lang;

/// Where an interpreter invocation's program comes from.
pub(super) enum Program {
    /// Code given on the command line: the indices of the words holding it.
    Inline(Vec<usize>),
    /// The program is read from stdin.
    Stdin,
    /// A script file or module (`python x.py`, `python -m pytest`), or
    /// something this reading does not know.
    Other,
}

/// The interpreter `program` is, if any: `python3.12`, `pypy3`, `node`,
/// `deno`, `bun`, `ruby`, `perl`, `php`.
pub(super) fn interpreter(program: &str) -> Option<Lang> {
    let base = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match base {
        "python" | "pypy" => Lang::Python,
        "node" | "nodejs" | "deno" | "bun" => Lang::Js,
        "ruby" => Lang::Ruby,
        "perl" => Lang::Perl,
        "php" => Lang::Php,
        _ => return None,
    })
}

/// Finds the program of an interpreter invocation in `words`.
pub(super) fn program_words(lang: Lang, program: &str, words: &[String]) -> Program {
    let mut code = Vec::new();
    let mut i = 1;
    // `deno eval CODE`, `bun eval CODE`? (bun: `bun -e`); `deno run x.ts` is a file.
    if matches!(program, "deno" | "bun") {
        match words.get(1).map(String::as_str) {
            Some("eval") => {
                return match words[2..].iter().position(|w| !w.starts_with('-')) {
                    Some(p) => Program::Inline(vec![p + 2]),
                    None => Program::Other,
                };
            }
            Some(w) if !w.starts_with('-') => return Program::Other,
            _ => {}
        }
    }
    while i < words.len() {
        let w = words[i].as_str();
        if w == "-" {
            return if code.is_empty() {
                Program::Stdin
            } else {
                Program::Inline(code)
            };
        }
        if w == "--" || !w.starts_with('-') {
            break;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            if lang == Lang::Js && matches!(name, "eval" | "print") {
                match value {
                    Some(_) => return Program::Other, // `--eval=CODE`: not read here
                    None if i + 1 < words.len() => {
                        code.push(i + 1);
                        i += 2;
                        continue;
                    }
                    None => return Program::Other,
                }
            }
            i += 1;
            continue;
        }
        let letters: Vec<char> = w[1..].chars().collect();
        // The letter whose value is the program, per language.
        let code_letter = |c: char| match lang {
            Lang::Python => c == 'c',
            Lang::Js => c == 'e' || c == 'p',
            Lang::Ruby => c == 'e',
            Lang::Perl => c == 'e' || c == 'E',
            Lang::Php => c == 'r',
        };
        // Letters that take the rest of the word or the next word as a value.
        let value_letter = |c: char| match lang {
            Lang::Python => matches!(c, 'W' | 'X' | 'm' | 'Q'),
            Lang::Js => matches!(c, 'r'),
            Lang::Ruby => matches!(c, 'I' | 'r' | 'C' | 'E' | 'F' | 'i' | 'x' | 'K' | 'T' | '0'),
            Lang::Perl => matches!(
                c,
                'M' | 'm' | 'I' | 'C' | 'D' | 'd' | 'F' | 'i' | 'l' | 'x' | '0'
            ),
            Lang::Php => matches!(c, 'c' | 'd' | 'f' | 'z' | 'B' | 'R' | 'F' | 'E' | 't'),
        };
        let mut consumed_next = false;
        let mut k = 0;
        while k < letters.len() {
            let c = letters[k];
            let last = k + 1 == letters.len();
            if code_letter(c) {
                if !last || i + 1 >= words.len() {
                    // `-e'CODE'` glued, or no code: not read here.
                    return Program::Other;
                }
                code.push(i + 1);
                consumed_next = true;
                break;
            }
            if lang == Lang::Python && c == 'm' {
                return Program::Other; // `python -m MODULE`
            }
            if lang == Lang::Perl && matches!(c, 'l' | '0') {
                // An optional glued number: `-l`, `-l0`, `-0777`.
                k += 1;
                while k < letters.len() && letters[k].is_ascii_hexdigit() {
                    k += 1;
                }
                continue;
            }
            if value_letter(c) {
                // Perl's -i takes an optional glued suffix only.
                if last && !(lang == Lang::Perl && c == 'i') {
                    i += 1; // the value word
                }
                break;
            }
            k += 1;
        }
        i += 1;
        if consumed_next {
            i += 1;
        }
        // Python's `-c` ends the options: the rest are sys.argv.
        if lang == Lang::Python && !code.is_empty() {
            return Program::Inline(code);
        }
    }
    if !code.is_empty() {
        return Program::Inline(code);
    }
    if i >= words.len() || words[i] == "--" && i + 1 >= words.len() {
        Program::Stdin
    } else {
        Program::Other
    }
}

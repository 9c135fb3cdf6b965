//! Quote removal and word decoding: turns a word node into the text bash
//! would pass, remembering which characters were quoted (a quoted `*` is no
//! glob) and whether an expansion makes the value unknown.

use tree_sitter::Node;

use super::literal::{unescape_double, unescape_unquoted};
use super::snippet;
use super::walk::{named_children, Walker};

/// Result of quote removal on one word.
pub(super) struct Word {
    /// Characters with whether each was quoted or escaped, which decides if
    /// it can act as a glob or brace-expansion metacharacter.
    pub(super) chars: Vec<(char, bool)>,
    /// False when the word holds an expansion whose value is unknown.
    pub(super) literal: bool,
    /// True when that expansion is a variable, arithmetic or undecodable
    /// string (substitutions are reported on their own).
    pub(super) variable: bool,
    /// The word as written, for reasons.
    pub(super) raw: String,
    /// True when an expansion in it is more than reading a variable
    /// (`$((…))` evaluates variables as code, `${X@P}`, `${!X}`): not even a
    /// print-only command may hold it.
    pub(super) evaluates: bool,
}

impl Word {
    /// The word after quote removal.
    pub(super) fn text(&self) -> String {
        self.chars.iter().map(|(c, _)| c).collect()
    }
    /// An unquoted `*`, `?` or `[`: bash may expand it to file names.
    pub(super) fn has_glob(&self) -> bool {
        self.chars
            .iter()
            .any(|&(c, quoted)| !quoted && matches!(c, '*' | '?' | '['))
    }
    /// Unquoted `{a,b}` or `{1..3}`: bash turns one word into several, so
    /// `rm -{r,f}` is `rm -r -f`.
    pub(super) fn has_brace_expansion(&self) -> bool {
        let mut open = None;
        for (i, &(c, quoted)) in self.chars.iter().enumerate() {
            if quoted {
                continue;
            }
            match c {
                '{' => open = Some(i),
                '}' => {
                    if let Some(start) = open {
                        let inner = &self.chars[start + 1..i];
                        let comma = inner.iter().any(|&(c, q)| !q && c == ',');
                        let range = inner
                            .windows(2)
                            .any(|w| !w[0].1 && !w[1].1 && w[0].0 == '.' && w[1].0 == '.');
                        if comma || range {
                            return true;
                        }
                    }
                }
                _ => {}
            }
        }
        false
    }
}

impl<'s> Walker<'s, '_> {
    /// Quote removal for one word node.
    pub(super) fn word(&mut self, node: Node<'s>, depth: usize) -> Word {
        let raw = self.text(node);
        let mut word = Word {
            // Quote removal leaves at most as many characters as the text
            // has (expansions aside): one allocation for most words.
            chars: Vec::with_capacity(raw.len()),
            literal: true,
            variable: false,
            raw: raw.to_string(),
            evaluates: false,
        };
        self.word_part(node, depth, &mut word);
        word
    }

    /// Appends one part of a word (a concatenation recurses).
    fn word_part(&mut self, node: Node<'s>, depth: usize, word: &mut Word) {
        let text = self.text(node);
        match node.kind() {
            "word" | "number" => unescape_unquoted(text, &mut word.chars),
            "raw_string" => {
                let inner = text.strip_prefix('\'').unwrap_or(text);
                let inner = inner.strip_suffix('\'').unwrap_or(inner);
                word.chars.extend(inner.chars().map(|c| (c, true)));
            }
            "ansi_c_string" => match decode_ansi_c(text) {
                Some(decoded) => word.chars.extend(decoded.chars().map(|c| (c, true))),
                None => {
                    word.literal = false;
                    word.variable = true;
                    word.evaluates = true;
                    word.chars.extend(text.chars().map(|c| (c, true)));
                }
            },
            "string" | "translated_string" => self.double_quoted(node, depth, word),
            "concatenation" => {
                for child in named_children(node) {
                    self.word_part(child, depth, word);
                }
            }
            "command_substitution" | "process_substitution" => {
                self.substitution(node, depth + 1);
                word.literal = false;
                word.chars.extend(text.chars().map(|c| (c, true)));
            }
            "expansion" | "simple_expansion" if self.known_expansion(text).is_some() => {
                let value = self.known_expansion(text).unwrap_or_default();
                word.chars.extend(value.chars().map(|c| (c, true)));
            }
            "arithmetic_expansion" | "expansion" | "simple_expansion" => {
                self.scan_substitutions(node, depth + 1);
                word.literal = false;
                word.variable = true;
                word.evaluates |= !plain_expansion(node.kind(), text);
                word.chars.extend(text.chars().map(|c| (c, true)));
            }
            kind => {
                if kind == "brace_expression" {
                    self.unparsed(format!("brace expansion `{}`", snippet(text)));
                } else {
                    self.unparsed(format!("unsupported word `{}` ({kind})", snippet(text)));
                }
                self.scan_substitutions(node, depth + 1);
                word.literal = false;
                word.evaluates = true;
                word.chars.extend(text.chars().map(|c| (c, false)));
            }
        }
    }

    /// The value of `$NAME`, `${NAME}`, `${NAME:-literal}` or
    /// `${NAME-literal}` when NAME is a `for` variable bound to a literal or
    /// is in `commands.variables`; None when unknown. A value that would be
    /// split or globbed (blanks, `*`) stays unknown.
    fn known_expansion(&self, text: &str) -> Option<String> {
        let (name, default) = if let Some(inner) = text.strip_prefix("${") {
            let inner = inner.strip_suffix('}')?;
            let end = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            let (name, rest) = inner.split_at(end);
            let default = match rest {
                "" => None,
                _ => Some(rest.strip_prefix(":-").or_else(|| rest.strip_prefix('-'))?),
            };
            (name, default)
        } else {
            (text.strip_prefix('$')?, None)
        };
        if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            return None;
        }
        let value = if let Some((_, v)) = self.bindings.iter().rev().find(|(n, _)| n == name) {
            Some(v.clone())
        } else if let Some(v) = self.ctx.vars.values.get(name) {
            Some(v.clone())
        } else if self.ctx.vars.unset.iter().any(|n| n == name) {
            // A default must be plain text to be known.
            default
                .filter(|d| !d.contains(['$', '`', '\\', '\'', '"', '}', '{']))
                .map(str::to_string)
        } else {
            None
        }?;
        super::literal::safe_value(&value).then_some(value)
    }

    /// A `"..."` string: literal text between its children follows the
    /// double-quote escape rules; children are expansions.
    fn double_quoted(&mut self, node: Node<'s>, depth: usize, word: &mut Word) {
        let text = self.text(node);
        let open = if text.starts_with("$\"") { 2 } else { 1 };
        let start = node.start_byte() + open;
        let end = node.end_byte().saturating_sub(1).max(start);
        let mut pos = start;
        for child in named_children(node) {
            if child.kind() == "string_content" {
                continue;
            }
            if child.start_byte() > pos {
                unescape_double(&self.src[pos..child.start_byte()], &mut word.chars);
            }
            self.word_part(child, depth, word);
            pos = child.end_byte();
        }
        if end > pos {
            unescape_double(&self.src[pos..end], &mut word.chars);
        }
    }
}

/// Decodes `$'...'` with its simple escapes. Numeric and control escapes
/// (`\x72`, `\162`, `\u0072`, `\cX`) return None: they exist mainly to hide
/// text, so the word is treated as an unknown expansion.
fn decode_ansi_c(text: &str) -> Option<String> {
    let inner = text.strip_prefix("$'")?.strip_suffix('\'')?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\x07',
            'b' => '\x08',
            'e' | 'E' => '\x1b',
            'f' => '\x0c',
            'v' => '\x0b',
            c @ ('\\' | '\'' | '"' | '?') => c,
            _ => return None,
        });
    }
    Some(out)
}

/// `$NAME`, `$1`, `${NAME}`, `${#NAME}` or `${NAME:-text}` (also `-`, `:+`,
/// `+`) with plain text: an expansion that only reads a variable.
fn plain_expansion(kind: &str, text: &str) -> bool {
    if kind == "simple_expansion" {
        return true;
    }
    if kind != "expansion" {
        return false;
    }
    let Some(inner) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) else {
        return false;
    };
    let inner = inner.strip_prefix('#').unwrap_or(inner);
    let end = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(inner.len());
    let (name, rest) = inner.split_at(end);
    if name.is_empty() {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    let word = ["-", ":-", "+", ":+"]
        .iter()
        .find_map(|op| rest.strip_prefix(op));
    word.is_some_and(|w| !w.contains(['$', '`', '{', '}', '\\']))
}

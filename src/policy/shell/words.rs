//! Quote removal and word decoding: turns a word node into the text bash
//! would pass, remembering which characters were quoted (a quoted `*` is no
//! glob) and whether an expansion makes the value unknown.

use tree_sitter::Node;

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
        let mut word = Word {
            chars: Vec::new(),
            literal: true,
            variable: false,
            raw: self.text(node).to_string(),
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
            "arithmetic_expansion" | "expansion" | "simple_expansion" => {
                self.scan_substitutions(node, depth + 1);
                word.literal = false;
                word.variable = true;
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
                word.chars.extend(text.chars().map(|c| (c, false)));
            }
        }
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

/// Backslash removal outside quotes: `a\ b` is `a b`; a backslash-newline
/// joins lines.
fn unescape_unquoted(text: &str, out: &mut Vec<(char, bool)>) {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push((next, true)),
            }
        } else {
            out.push((c, false));
        }
    }
}

/// Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and
/// newline; elsewhere it stays.
fn unescape_double(text: &str, out: &mut Vec<(char, bool)>) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    out.push((next, true));
                }
                _ => out.push(('\\', true)),
            }
        } else {
            out.push((c, true));
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

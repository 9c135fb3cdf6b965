//! Side-effect-free readings of syntax nodes that decide what a command
//! receives as data: the text a literal `echo`/`printf` prints into a pipe
//! (`echo 'ls' | bash`) and the literal words of a `for` list; and quote
//! removal for unquoted and double-quoted text.

use tree_sitter::Node;

use super::basename;

fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The named children of `node` with their field names.
fn children_with_fields(node: Node<'_>) -> Vec<(Option<&'static str>, Node<'_>)> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    if cursor.goto_first_child() {
        loop {
            if cursor.node().is_named() {
                out.push((cursor.field_name(), cursor.node()));
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    out
}

/// The text of a word node that holds no expansion, glob or brace
/// expansion; None otherwise.
pub(super) fn literal_word(node: Node<'_>, src: &str) -> Option<String> {
    let text = &src[node.byte_range()];
    match node.kind() {
        "word" | "number" => {
            let mut chars = Vec::new();
            unescape_unquoted(text, &mut chars);
            if chars
                .iter()
                .any(|&(c, q)| !q && matches!(c, '*' | '?' | '[' | '{' | '}'))
            {
                return None;
            }
            Some(chars.into_iter().map(|(c, _)| c).collect())
        }
        "raw_string" => Some(text.strip_prefix('\'')?.strip_suffix('\'')?.to_string()),
        "string" => {
            if named_children(node)
                .iter()
                .any(|c| c.kind() != "string_content")
            {
                return None;
            }
            let inner = text.strip_prefix('"')?.strip_suffix('"')?;
            let mut chars = Vec::new();
            unescape_double(inner, &mut chars);
            Some(chars.into_iter().map(|(c, _)| c).collect())
        }
        "concatenation" => {
            let mut out = String::new();
            for part in named_children(node) {
                out.push_str(&literal_word(part, src)?);
            }
            Some(out)
        }
        _ => None,
    }
}

/// A value that stays one word when a variable holding it is expanded
/// unquoted: not empty, no blanks (word splitting) and no glob characters.
pub(super) fn safe_value(value: &str) -> bool {
    !value.is_empty()
        && !value
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '*' | '?' | '[' | '\0'))
}

/// The text a pipeline stage prints when it is `echo` or `printf` with
/// literal arguments and no redirections; None when it cannot be known.
pub(super) fn printed_text(node: Node<'_>, src: &str) -> Option<String> {
    if node.kind() != "command" {
        return None;
    }
    let mut words = Vec::new();
    for (field, child) in children_with_fields(node) {
        match (field, child.kind()) {
            (Some("name"), "command_name") => {
                let inner = named_children(child);
                words.push(literal_word(*inner.first()?, src)?);
            }
            (Some("argument"), _) => words.push(literal_word(child, src)?),
            _ => return None,
        }
    }
    let program = basename(words.first()?).to_string();
    let args = &words[1..];
    match program.as_str() {
        "echo" => {
            let mut newline = true;
            let mut i = 0;
            while let Some(flag) = args.get(i) {
                match flag.as_str() {
                    "-n" => newline = false,
                    "-E" => {}
                    "-e" | "-ne" | "-en" => {
                        if args[i + 1..].iter().any(|a| a.contains('\\')) {
                            return None;
                        }
                        if flag != "-e" {
                            newline = false;
                        }
                    }
                    _ => break,
                }
                i += 1;
            }
            let mut text = args[i..].join(" ");
            if newline {
                text.push('\n');
            }
            Some(text)
        }
        "printf" => {
            let format = args.first()?;
            let rest = &args[1..];
            match format.as_str() {
                "%s\\n" => Some(rest.iter().map(|a| format!("{a}\n")).collect()),
                "%s" => Some(rest.concat()),
                f if !f.contains('%') => {
                    let text = f.replace("\\n", "\n");
                    (!text.contains('\\')).then_some(text)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Backslash removal outside quotes: `a\ b` is `a b`; a backslash-newline
/// joins lines.
pub(super) fn unescape_unquoted(text: &str, out: &mut Vec<(char, bool)>) {
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
pub(super) fn unescape_double(text: &str, out: &mut Vec<(char, bool)>) {
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

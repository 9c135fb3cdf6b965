//! Rule regex syntax: the `regex` crate's, with ASCII Perl classes.
//!
//! In every redaction rule (built-in, policy, imported) `\d`, `\w`, `\s` and
//! `\b` (and their negations) are ASCII-only, as in Go and so in gitleaks.
//! Secrets are ASCII, and a Unicode `\w{1,256}` compiles to an automaton of
//! several megabytes while `[[:word:]]{1,256}` takes kilobytes; an ASCII `\b`
//! also keeps the DFA engines usable on non-ASCII text. Unicode classes are
//! still there when asked for: `\p{L}`, `[[:^ascii:]]`, `.`.

use regex_syntax::ast::{self, Ast};

/// `pattern` with its Perl classes rewritten as ASCII classes and its word
/// boundaries as `(?-u:\b)`. `Err` says why the pattern does not parse
/// (look-around, backreferences, … — syntax the `regex` crate does not have).
pub fn ascii_perl_classes(pattern: &str) -> Result<String, String> {
    let tree = ascii_ast(pattern)?;
    let mut out = String::new();
    ast::print::Printer::new()
        .print(&tree, &mut out)
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// What [`ascii_perl_classes`] prints, as a syntax tree: for translating
/// straight to HIR (with `pattern` for the spans), without printing and
/// parsing it again.
pub(super) fn ascii_ast(pattern: &str) -> Result<Ast, String> {
    let mut tree = parse(pattern)?;
    asciify(&mut tree);
    Ok(tree)
}

/// How many capture groups `pattern` has, after the same syntax checks as
/// [`ascii_perl_classes`].
pub fn capture_groups(pattern: &str) -> Result<usize, String> {
    fn count(node: &Ast) -> usize {
        match node {
            Ast::Group(g) => usize::from(g.capture_index().is_some()) + count(&g.ast),
            Ast::Repetition(r) => count(&r.ast),
            Ast::Alternation(a) => a.asts.iter().map(count).sum(),
            Ast::Concat(c) => c.asts.iter().map(count).sum(),
            _ => 0,
        }
    }
    Ok(count(&parse(pattern)?))
}

fn parse(pattern: &str) -> Result<Ast, String> {
    let tree = ast::parse::Parser::new().parse(pattern).map_err(|e| {
        let at = e.span().start.offset;
        let near: String = pattern[at..].chars().take(12).collect();
        if near.is_empty() {
            e.kind().to_string()
        } else {
            format!("{} (at `{near}`)", e.kind())
        }
    })?;
    if let Some(at) = nested_repetition(&tree) {
        let near: String = pattern[at..].chars().take(12).collect();
        return Err(format!(
            "possessive quantifiers (`++`, `*+`, `?+`) and stacked repetition operators are not supported (at `{near}`)"
        ));
    }
    Ok(tree)
}

/// Where a repetition operator applies directly to another (`a++`): the
/// `regex` crate reads that as a nested repetition, PCRE as possessive, and
/// Go rejects it, so it cannot mean what its author meant.
fn nested_repetition(node: &Ast) -> Option<usize> {
    match node {
        Ast::Repetition(r) => match &*r.ast {
            Ast::Repetition(_) => Some(r.op.span.start.offset),
            inner => nested_repetition(inner),
        },
        Ast::Group(g) => nested_repetition(&g.ast),
        Ast::Alternation(a) => a.asts.iter().find_map(nested_repetition),
        Ast::Concat(c) => c.asts.iter().find_map(nested_repetition),
        _ => None,
    }
}

fn asciify(node: &mut Ast) {
    match node {
        Ast::ClassPerl(p) => {
            let (span, negated) = (p.span, p.negated);
            let kind = ascii_kind(&p.kind);
            *node = Ast::class_bracketed(ast::ClassBracketed {
                span,
                negated,
                kind: ast::ClassSet::Item(ast::ClassSetItem::Ascii(ast::ClassAscii {
                    span,
                    kind,
                    negated: false,
                })),
            });
        }
        Ast::Assertion(a)
            if matches!(
                a.kind,
                ast::AssertionKind::WordBoundary | ast::AssertionKind::NotWordBoundary
            ) =>
        {
            let span = a.span;
            let inner = std::mem::replace(node, Ast::empty(span));
            *node = Ast::group(ast::Group {
                span,
                kind: ast::GroupKind::NonCapturing(ast::Flags {
                    span,
                    items: vec![
                        ast::FlagsItem {
                            span,
                            kind: ast::FlagsItemKind::Negation,
                        },
                        ast::FlagsItem {
                            span,
                            kind: ast::FlagsItemKind::Flag(ast::Flag::Unicode),
                        },
                    ],
                }),
                ast: Box::new(inner),
            });
        }
        Ast::ClassBracketed(b) => asciify_set(&mut b.kind),
        Ast::Repetition(r) => asciify(&mut r.ast),
        Ast::Group(g) => asciify(&mut g.ast),
        Ast::Alternation(a) => a.asts.iter_mut().for_each(asciify),
        Ast::Concat(c) => c.asts.iter_mut().for_each(asciify),
        _ => {}
    }
}

fn asciify_set(set: &mut ast::ClassSet) {
    match set {
        ast::ClassSet::Item(item) => asciify_item(item),
        ast::ClassSet::BinaryOp(op) => {
            asciify_set(&mut op.lhs);
            asciify_set(&mut op.rhs);
        }
    }
}

fn asciify_item(item: &mut ast::ClassSetItem) {
    match item {
        ast::ClassSetItem::Perl(p) => {
            *item = ast::ClassSetItem::Ascii(ast::ClassAscii {
                span: p.span,
                kind: ascii_kind(&p.kind),
                negated: p.negated,
            });
        }
        ast::ClassSetItem::Bracketed(b) => asciify_set(&mut b.kind),
        ast::ClassSetItem::Union(u) => u.items.iter_mut().for_each(asciify_item),
        _ => {}
    }
}

fn ascii_kind(kind: &ast::ClassPerlKind) -> ast::ClassAsciiKind {
    match kind {
        ast::ClassPerlKind::Digit => ast::ClassAsciiKind::Digit,
        ast::ClassPerlKind::Space => ast::ClassAsciiKind::Space,
        ast::ClassPerlKind::Word => ast::ClassAsciiKind::Word,
    }
}

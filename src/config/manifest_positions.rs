//! Where the values the manifest compiler checks are written in their TOML.
//!
//! [`Manifest`](super::manifest::Manifest) holds plain values, so the same
//! struct loads from TOML or from the JSON build.rs makes of the built-in
//! manifests. Positions are needed only when a check fails; then the text is
//! parsed a second time into this mirror, which keeps the spans.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::diagnostics::Position;
use super::parse::position_of;

/// The spans of one manifest's checked values, parsed on first use.
pub struct ManifestPositions<'a> {
    text: &'a str,
    spans: OnceCell<Spans>,
}

#[derive(Default, Deserialize)]
struct Spans {
    name: Option<Spanned<String>>,
    #[serde(default)]
    exec: Option<ExecSpans>,
    #[serde(default)]
    effects: Option<EffectsSpans>,
}

#[derive(Default, Deserialize)]
struct ExecSpans {
    #[serde(default)]
    env: Vec<Spanned<String>>,
}

#[derive(Default, Deserialize)]
struct EffectsSpans {
    #[serde(default)]
    paths: BTreeMap<Spanned<String>, toml::Value>,
    command: Option<Spanned<String>>,
}

impl<'a> ManifestPositions<'a> {
    /// Positions in `text`, a manifest's TOML source.
    pub fn new(text: &'a str) -> Self {
        ManifestPositions {
            text,
            spans: OnceCell::new(),
        }
    }

    fn spans(&self) -> &Spans {
        self.spans
            .get_or_init(|| toml::from_str(self.text).unwrap_or_default())
    }

    fn at(&self, span: Option<std::ops::Range<usize>>) -> Position {
        span.map_or(Position { line: 1, col: 1 }, |s| {
            position_of(self.text, s.start)
        })
    }

    /// The `name = …` value.
    pub fn name(&self) -> Position {
        self.at(self.spans().name.as_ref().map(Spanned::span))
    }

    /// The key `arg` of `[effects] paths`.
    pub fn effects_path(&self, arg: &str) -> Position {
        let spans = self.spans().effects.as_ref();
        let key = spans.and_then(|e| e.paths.keys().find(|k| k.get_ref() == arg));
        self.at(key.map(Spanned::span))
    }

    /// The `[effects] command` value.
    pub fn effects_command(&self) -> Position {
        let spans = self.spans().effects.as_ref();
        self.at(spans.and_then(|e| e.command.as_ref()).map(Spanned::span))
    }

    /// The `index`-th entry of `[exec] env`.
    pub fn exec_env(&self, index: usize) -> Position {
        let spans = self.spans().exec.as_ref();
        self.at(spans.and_then(|e| e.env.get(index)).map(Spanned::span))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"t\"\ndescription = \"d\"\n\n[effects]\ncommand = \"cmd\"\npaths = { src = \"read\", dst = \"write\" }\n\n[exec]\nenv = [\"PATH\", \"A=B\"]\n";

    fn at(line: usize, col: usize) -> Position {
        Position { line, col }
    }

    #[test]
    fn each_checked_value_has_its_position() {
        let p = ManifestPositions::new(TEXT);
        assert_eq!(p.name(), at(1, 8));
        assert_eq!(p.effects_command(), at(5, 11));
        assert_eq!(p.effects_path("dst"), at(6, 25));
        assert_eq!(p.exec_env(1), at(9, 16));
    }

    #[test]
    fn what_is_not_there_is_line_one() {
        let p = ManifestPositions::new(TEXT);
        assert_eq!(p.effects_path("nope"), at(1, 1));
        assert_eq!(p.exec_env(5), at(1, 1));
        assert_eq!(ManifestPositions::new("not [ toml").name(), at(1, 1));
    }
}

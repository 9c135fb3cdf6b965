//! A position index for YAML documents.
//!
//! `serde_yaml` tells where a *syntax* or *type* error is, but the compiler also
//! finds problems after deserialization (an unknown tool in `rules[2].tools`, a
//! regex that does not compile). This index maps a dotted path such as
//! `rules.2.tools.0` to the line and column where that node starts, so those
//! errors point at the exact spot too. It is built from a second, event-level
//! parse of the same text — only when a position is first asked for, because
//! a policy that loads cleanly never needs one, and that parse costs as much
//! as reading the policy (a hook pays for it on every tool call).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use saphyr_parser::{Event, Parser};

use super::diagnostics::Position;

/// Where each node of a YAML document starts, by dotted path, indexed on
/// first use.
#[derive(Debug, Default, Clone)]
pub struct SourceMap {
    text: Arc<str>,
    index: OnceLock<Index>,
}

#[derive(Debug, Default, Clone)]
struct Index {
    values: HashMap<String, Position>,
    keys: HashMap<String, Position>,
}

enum Frame {
    Mapping { path: String, key: Option<String> },
    Sequence { path: String, index: usize },
}

fn join(parent: &str, segment: &str) -> String {
    if parent.is_empty() {
        segment.to_string()
    } else {
        format!("{parent}.{segment}")
    }
}

impl SourceMap {
    /// The index of `text`, built when a position is first asked for.
    pub fn build(text: &str) -> SourceMap {
        SourceMap {
            text: Arc::from(text),
            index: OnceLock::new(),
        }
    }

    fn index(&self) -> &Index {
        self.index.get_or_init(|| Index::build(&self.text))
    }

    /// Where the node at `path` starts; falls back to the nearest ancestor that
    /// exists, and to the top of the file.
    pub fn value(&self, path: &str) -> Position {
        lookup(&self.index().values, path)
    }

    /// Where the *key* of the mapping entry at `path` is (the line a reader
    /// looks at for "unknown field"); falls back like [`SourceMap::value`].
    pub fn key(&self, path: &str) -> Position {
        let index = self.index();
        index
            .keys
            .get(path)
            .copied()
            .unwrap_or_else(|| lookup(&index.values, path))
    }
}

impl Index {
    /// Indexes `text`. Stops quietly at a syntax error: the deserializer reports
    /// that one with its own position.
    fn build(text: &str) -> Index {
        let mut map = Index::default();
        let mut stack: Vec<Frame> = Vec::new();
        let mut parser = Parser::new_from_str(text);
        while let Some(Ok((event, span))) = parser.next_event() {
            let pos = Position {
                line: span.start.line(),
                col: span.start.col() + 1,
            };
            let is_node = matches!(
                event,
                Event::Scalar(..)
                    | Event::SequenceStart(..)
                    | Event::MappingStart(..)
                    | Event::Alias(_)
            );
            let mut node_path = None;
            if is_node {
                match stack.last_mut() {
                    Some(Frame::Mapping { path, key }) if key.is_none() => {
                        // A key: remember it, the value comes next.
                        let name = match &event {
                            Event::Scalar(value, ..) => value.to_string(),
                            _ => "?".to_string(),
                        };
                        map.keys.insert(join(path, &name), pos);
                        *key = Some(name);
                        if !matches!(event, Event::Scalar(..)) {
                            // Complex keys are not part of our formats; index nothing under them.
                            node_path = Some(join(path, "?"));
                        }
                    }
                    Some(Frame::Mapping { path, key }) => {
                        let p = join(path, key.as_deref().unwrap_or("?"));
                        *key = None;
                        node_path = Some(p);
                    }
                    Some(Frame::Sequence { path, index }) => {
                        let p = join(path, &index.to_string());
                        *index += 1;
                        node_path = Some(p);
                    }
                    None => node_path = Some(String::new()),
                }
            }
            if let Some(p) = &node_path {
                map.values.entry(p.clone()).or_insert(pos);
            }
            match event {
                Event::MappingStart(..) => stack.push(Frame::Mapping {
                    path: node_path.unwrap_or_default(),
                    key: None,
                }),
                Event::SequenceStart(..) => stack.push(Frame::Sequence {
                    path: node_path.unwrap_or_default(),
                    index: 0,
                }),
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                }
                _ => {}
            }
        }
        map
    }
}

fn lookup(map: &HashMap<String, Position>, path: &str) -> Position {
    let mut p = path;
    loop {
        if let Some(pos) = map.get(p) {
            return *pos;
        }
        match p.rfind('.') {
            Some(i) => p = &p[..i],
            None => {
                return map.get("").copied().unwrap_or(Position { line: 1, col: 1 });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "version: 1\ntools:\n  active: [read, grep]\nrules:\n  - id: a\n    tools: [write]\n  - id: b\n    when: { arg: content }\n";

    #[test]
    fn finds_nested_values_and_keys() {
        let map = SourceMap::build(DOC);
        assert_eq!(map.value("tools.active.1"), Position { line: 3, col: 18 });
        assert_eq!(map.value("rules.0.tools.0"), Position { line: 6, col: 13 });
        assert_eq!(map.key("rules.1.when"), Position { line: 8, col: 5 });
        assert_eq!(map.value("rules.1.when.arg"), Position { line: 8, col: 18 });
    }

    #[test]
    fn falls_back_to_the_nearest_ancestor() {
        let map = SourceMap::build(DOC);
        assert_eq!(
            map.value("rules.1.when.missing.deeper"),
            map.value("rules.1.when")
        );
        assert_eq!(map.value("nothing"), Position { line: 1, col: 1 });
    }
}

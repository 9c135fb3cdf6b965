//! The answer to a forwarded `tools/call`, read from the upstream's line in
//! one pass into what `call.rs` makes a tool output of.
//!
//! The general reading (`stdio.rs`) parses the whole line into a
//! `serde_json::Value` (an `IndexMap` per object, every key hashed with
//! SipHash), takes `result` out of it, and `call.rs` then checks its shape
//! and takes it apart again. The usual answer — `content` of text blocks,
//! maybe `structuredContent` and `isError` — is read here straight into a
//! [`CallAnswer`]: only `structuredContent` stays JSON (it is kept in the
//! details as it is). Whatever this reading is unsure of — a block that is
//! not a plain text block, a `resultType`, duplicate keys, an `error`, a
//! `method`, anything that fails to read — makes [`read`] return `None`,
//! and the line goes the general way, as before. The tests compare both
//! ways on many answers.
//!
//! The answer reaches the waiting call beside rmcp's service loop: the
//! transport files it under its request id in [`Pending`] and hands rmcp an
//! empty (`null`) result for that id, so rmcp's own bookkeeping (the
//! waiting request, its timeout) runs as before. The call takes its answer
//! when rmcp wakes it; a call that ends without taking it (cancelled,
//! dropped) removes its id, so a late answer is not filed.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};

use rmcp::model::RequestId;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::{Map, Value};

/// Requests sent to a stdio upstream and not answered yet, which of them
/// are `tools/call`s, and the calls' answers read but not taken yet.
/// Shared by the transport and the calls (through the `Handler`).
#[derive(Default)]
pub struct Pending {
    /// Every request waiting for an answer.
    pub all: HashSet<RequestId, Ids>,
    /// The `tools/call`s among them whose caller still waits.
    pub calls: HashSet<RequestId, Ids>,
    /// Answers read in one pass, until their call takes them.
    answers: HashMap<RequestId, CallAnswer, Ids>,
}

impl Pending {
    /// Files `answer` for the call `id` when that call is waiting (and
    /// stops waiting for it); false, filing nothing, otherwise.
    pub fn file(&mut self, id: &RequestId, answer: CallAnswer) -> bool {
        if !self.calls.remove(id) {
            return false;
        }
        self.all.remove(id);
        self.answers.insert(id.clone(), answer);
        true
    }

    /// The answer filed for `id`, taken out.
    pub fn take(&mut self, id: &RequestId) -> Option<CallAnswer> {
        self.answers.remove(id)
    }

    /// The call `id` ended: its answer is no longer filed (an answer read
    /// later goes the general way, and rmcp drops it as it did).
    pub fn forget(&mut self, id: &RequestId) {
        self.calls.remove(id);
        self.answers.remove(id);
    }
}

/// Hashing for the request ids and progress tokens of one upstream
/// session: an Fx-style multiply per word instead of SipHash. Only ids
/// rmcp's peer made up (sequential numbers) are ever inserted; an
/// upstream's answer only looks one up, so it cannot crowd a table.
#[derive(Clone, Copy, Default)]
pub struct Ids;

impl BuildHasher for Ids {
    type Hasher = IdHash;
    fn build_hasher(&self) -> IdHash {
        IdHash(0)
    }
}

/// The hasher [`Ids`] builds.
pub struct IdHash(u64);

impl IdHash {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for IdHash {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or_default()));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `CallToolResult` of text blocks, as read in one pass.
#[derive(Debug, PartialEq)]
pub struct CallAnswer {
    /// The text of each content block, in order.
    pub texts: Vec<String>,
    /// `structuredContent` when the key was there (`null` included).
    pub structured: Option<Value>,
    /// `isError` is `true`.
    pub is_error: bool,
}

/// Whether a field was present, whatever its value.
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

/// The answer line (fields the general reading looks at; others ignored,
/// as it ignores them). A duplicate field fails the reading.
#[derive(Deserialize)]
struct Line {
    id: RequestId,
    #[serde(default)]
    method: Present,
    #[serde(default)]
    error: Present,
    result: Option<CallResult>,
}

/// The fields of a `CallToolResult` that rmcp's reading checks.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallResult {
    #[serde(default)]
    result_type: Option<Value>,
    #[serde(default)]
    content: Option<Vec<Block>>,
    #[serde(default, deserialize_with = "keyed")]
    structured_content: Option<Value>,
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(rename = "_meta", default)]
    #[allow(dead_code)]
    meta: Option<Map<String, Value>>,
}

/// A text block (`type` is checked after reading).
#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    text: String,
    #[serde(default)]
    annotations: Option<IgnoredAny>,
    #[serde(rename = "_meta", default)]
    meta: Option<IgnoredAny>,
}

/// A present key as `Some`, even when its value is `null`.
fn keyed<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Whether `v` is absent or `null` (an `Option<IgnoredAny>` reads `null`
/// as `None`).
fn absent(v: &Option<IgnoredAny>) -> bool {
    v.is_none()
}

/// The id and answer of `line` (without its newline and BOM) when it is a
/// plain `tools/call` answer of text blocks; `None` when it is anything
/// else or this reading is unsure (the general reading takes it then).
pub fn read(line: &[u8]) -> Option<(RequestId, CallAnswer)> {
    let l: Line = serde_json::from_slice(line).ok()?;
    if l.method.0 || l.error.0 {
        return None;
    }
    let r = l.result?;
    if r.result_type.as_ref().is_some_and(|t| t != "complete")
        || (r.content.is_none() && r.structured_content.is_none() && r.is_error.is_none())
    {
        return None;
    }
    let mut texts = Vec::new();
    for b in r.content.unwrap_or_default() {
        if b.kind != "text" || !absent(&b.annotations) || !absent(&b.meta) {
            return None;
        }
        texts.push(b.text);
    }
    Some((
        l.id,
        CallAnswer {
            texts,
            structured: r.structured_content,
            is_error: r.is_error == Some(true),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_hash_apart_and_tables_work() {
        let ids: Vec<RequestId> = (0..2000)
            .map(RequestId::Number)
            .chain((0..2000).map(|n| RequestId::String(format!("id-{n}").into())))
            .collect();
        let hashes: HashSet<u64> = ids.iter().map(|id| Ids.hash_one(id)).collect();
        assert_eq!(hashes.len(), ids.len());
        // a number and the string of its digits are different keys
        assert_ne!(
            Ids.hash_one(RequestId::Number(7)),
            Ids.hash_one(RequestId::String("7".into()))
        );
        let mut p = Pending::default();
        for id in &ids {
            p.all.insert(id.clone());
            p.calls.insert(id.clone());
        }
        let answer = || CallAnswer {
            texts: vec![],
            structured: None,
            is_error: false,
        };
        assert!(p.file(&RequestId::Number(5), answer()));
        assert!(!p.file(&RequestId::Number(5), answer()), "filed once");
        assert!(!p.file(&RequestId::Number(99_999), answer()), "not sent");
        assert!(!p.all.contains(&RequestId::Number(5)));
        p.forget(&RequestId::String("id-3".into()));
        assert!(
            !p.file(&RequestId::String("id-3".into()), answer()),
            "forgotten"
        );
        assert!(p.take(&RequestId::Number(5)).is_some());
        assert!(p.take(&RequestId::Number(5)).is_none());
    }
}

//! Whole decisions remembered within one `replay` run: a call recorded again
//! (the same tool, arguments and caller) gets the answer its first
//! occurrence got, without parsing and resolving it again.
//!
//! The key is everything a decision in `replay` reads from a record — whose
//! tool names they are (toolgate's or an agent CLI's), the recorded caller
//! (id, profile, how it was established), the tool name and the exact
//! arguments — serialized so that two different records never share a key.
//! What else a decision depends on is fixed for the run: the policies (with
//! `--profile`, `--enforce-audit` applied when loaded), the workspace and the
//! `--identity` caller. The one thing outside the key is the file system
//! (symlinks, globs): a decision is remembered from the first time the call
//! is decided, as if the file system had been read once at that moment
//! (likewise a script whose parse ran out of `limits` time, which depends on
//! the machine's load, keeps its first answer). `--no-memo` decides every
//! call afresh.
//!
//! Memory is bounded: at most [`BUDGET`] bytes (estimated) of keys and
//! answers, in two generations per shard; when the newer one is full, the
//! older one is cleared and becomes the newer, so calls that keep recurring
//! stay remembered (a hit in the older generation is copied forward) and a
//! log of distinct calls costs a bounded, small amount of memory.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::Mutex;

use serde_json::Value;

use super::input::Record;
use crate::policy::Decision;

/// The memo's memory budget, keys and answers together (estimated).
pub const BUDGET: usize = 8 << 20;

/// Calls whose key is longer than this are not remembered (a long script
/// is rarely repeated verbatim, and would take a large share of the budget).
pub const MAX_KEY: usize = 4 << 10;

/// Bytes of an entry besides its key and rule: the entry and its slot in
/// the index (a table up to half empty).
const OVERHEAD: usize = 64;

/// Shards, each behind its own lock, so the worker threads rarely wait.
const SHARDS: usize = 16;

/// What a call was decided to: under the baseline (when there is one) and
/// under the new policy, with the rule that decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// The baseline's decision (`None` without `--baseline`).
    pub from: Option<Decision>,
    /// The new policy's decision.
    pub to: Decision,
    /// The new policy's deciding rule.
    pub rule: Option<String>,
}

/// Where an entry's key and rule are in its generation's bytes.
#[derive(Clone, Copy)]
struct Entry {
    key: (u32, u32),
    rule: Option<(u32, u32)>,
    from: Option<Decision>,
    to: Decision,
}

/// A hasher for keys that are hashes already.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One generation of a shard. Keys and rules are kept back to back in one
/// buffer, and the buffers are reused when the generation is cleared: a
/// memo that allocated per entry would interleave long-lived blocks with
/// each decision's short-lived ones and fragment the heap (measured: a log
/// of distinct calls got slower than without the memo).
#[derive(Default)]
struct Generation {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
    /// A key's hash -> its entry. A second key with the same hash is not
    /// remembered (its bytes are always compared).
    index: HashMap<u64, u32, BuildHasherDefault<Prehashed>>,
}

impl Generation {
    fn slice(&self, (at, len): (u32, u32)) -> &[u8] {
        &self.bytes[at as usize..(at + len) as usize]
    }

    fn find(&self, hash: u64, key: &[u8]) -> Option<Answer> {
        let entry = self.entries[*self.index.get(&hash)? as usize];
        if self.slice(entry.key) != key {
            return None;
        }
        let rule = match entry.rule {
            Some(at) => Some(std::str::from_utf8(self.slice(at)).ok()?.to_string()),
            None => None,
        };
        Some(Answer {
            from: entry.from,
            to: entry.to,
            rule,
        })
    }

    /// Estimated bytes held.
    fn cost(&self) -> usize {
        self.bytes.len() + self.entries.len() * OVERHEAD
    }

    fn insert(&mut self, hash: u64, key: &[u8], answer: &Answer) {
        if self.index.contains_key(&hash) {
            return;
        }
        let mut push = |bytes: &[u8]| {
            let at = self.bytes.len() as u32;
            self.bytes.extend_from_slice(bytes);
            (at, bytes.len() as u32)
        };
        let entry = Entry {
            key: push(key),
            rule: answer.rule.as_deref().map(|r| push(r.as_bytes())),
            from: answer.from,
            to: answer.to,
        };
        self.index.insert(hash, self.entries.len() as u32);
        self.entries.push(entry);
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
        self.index.clear();
    }
}

/// One shard: a newer and an older generation.
#[derive(Default)]
struct Shard {
    generations: [Generation; 2],
    /// Which of the two is the newer.
    newer: usize,
}

impl Shard {
    fn insert(&mut self, hash: u64, key: &[u8], answer: &Answer) {
        let cost = key.len() + answer.rule.as_ref().map_or(0, String::len) + OVERHEAD;
        if self.generations[self.newer].cost() + cost > BUDGET / SHARDS / 2 {
            // The older generation is forgotten; its buffers are reused.
            self.newer = 1 - self.newer;
            self.generations[self.newer].clear();
        }
        self.generations[self.newer].insert(hash, key, answer);
    }
}

/// The decisions of one run, shared by its worker threads.
pub struct Memo {
    shards: Vec<Mutex<Shard>>,
    hasher: RandomState,
}

impl Memo {
    /// An empty memo.
    pub fn new() -> Memo {
        Memo {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hasher: RandomState::new(),
        }
    }

    /// The hash of `key` and its shard, locked. The shard is taken from
    /// middle bits of the hash: the tables use the low ones for places and
    /// the high ones for tags.
    fn shard(&self, key: &[u8]) -> (u64, std::sync::MutexGuard<'_, Shard>) {
        let hash = self.hasher.hash_one(key);
        let i = (hash >> 32) as usize % SHARDS;
        // A worker that panicked while holding the lock left whole entries
        // (an entry is indexed only once it is complete).
        (
            hash,
            self.shards[i].lock().unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// The answer remembered for `key`.
    pub fn get(&self, key: &[u8]) -> Option<Answer> {
        let (hash, mut shard) = self.shard(key);
        let newer = shard.newer;
        if let Some(answer) = shard.generations[newer].find(hash, key) {
            return Some(answer);
        }
        // Still wanted: copied into the newer generation.
        let answer = shard.generations[1 - newer].find(hash, key)?;
        shard.insert(hash, key, &answer);
        Some(answer)
    }

    /// Remembers `answer` for `key`.
    pub fn put(&self, key: &[u8], answer: &Answer) {
        let (hash, mut shard) = self.shard(key);
        shard.insert(hash, key, answer);
    }

    /// How many answers are remembered (both generations).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| {
                let s = s.lock().unwrap();
                s.generations.iter().map(|g| g.entries.len()).sum::<usize>()
            })
            .sum()
    }
}

/// The key of a record's call (`name`, `arguments`: the call as lent to the
/// policies), or `None` when it is too long to remember.
pub fn key(record: &Record, name: &str, arguments: &Value) -> Option<Vec<u8>> {
    let identity = record.identity.as_ref();
    // A JSON array, then the arguments' JSON: both self-delimiting, with
    // every string escaped, so different records give different keys.
    let head = (
        record.agent.map(|a| a.key()),
        identity.map(|i| i.id.as_str()),
        identity.and_then(|i| i.profile.as_deref()),
        identity.map(|i| format!("{:?}", i.source)),
        name,
    );
    let mut key = Vec::with_capacity(64);
    serde_json::to_writer(&mut key, &head).ok()?;
    serde_json::to_writer(&mut key, arguments).ok()?;
    (key.len() <= MAX_KEY).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::Agent;
    use crate::policy::auth::{Identity, IdentitySource};
    use serde_json::json;

    fn record(identity: Option<Identity>, agent: Option<Agent>) -> Record {
        Record {
            name: String::new(),
            arguments: serde_json::Map::new(),
            agent,
            recorded: Some(Decision::Allow),
            identity,
        }
    }

    fn answer(rule: &str) -> Answer {
        Answer {
            from: None,
            to: Decision::Ask,
            rule: Some(rule.to_string()),
        }
    }

    #[test]
    fn keys_differ_in_everything_a_decision_reads() {
        let args = json!({"command": "git status"});
        let plain = key(&record(None, None), "bash", &args).unwrap();
        let mut jwt = Identity::new("alice", None);
        jwt.source = IdentitySource::Jwt;
        let others = [
            key(&record(None, None), "shell", &args),
            key(
                &record(None, None),
                "bash",
                &json!({"command": "git status "}),
            ),
            key(&record(None, Some(Agent::Claude)), "bash", &args),
            key(&record(None, Some(Agent::Codex)), "bash", &args),
            key(
                &record(Some(Identity::new("alice", None)), None),
                "bash",
                &args,
            ),
            key(&record(Some(jwt), None), "bash", &args),
            key(
                &record(Some(Identity::new("alice", Some("ro".into()))), None),
                "bash",
                &args,
            ),
            key(
                &record(Some(Identity::new("bob", None)), None),
                "bash",
                &args,
            ),
            // A string that would close the head early if it were not escaped.
            key(
                &record(Some(Identity::new("a\",null,null,null,\"bash", None)), None),
                "",
                &args,
            ),
        ];
        let mut all = vec![plain.clone()];
        for k in others {
            let k = k.unwrap();
            assert!(!all.contains(&k), "{}", String::from_utf8_lossy(&k));
            all.push(k);
        }
        // The same call, the same key.
        assert_eq!(key(&record(None, None), "bash", &args).unwrap(), plain);
    }

    #[test]
    fn a_long_call_is_not_remembered() {
        let long = json!({"command": "x".repeat(MAX_KEY)});
        assert_eq!(key(&record(None, None), "bash", &long), None);
    }

    #[test]
    fn answers_come_back_and_memory_stays_bounded() {
        let memo = Memo::new();
        memo.put(b"k0", &answer("r0"));
        assert_eq!(memo.get(b"k0"), Some(answer("r0")));
        assert_eq!(memo.get(b"k1"), None);
        // Far more distinct calls than fit: the oldest go, the count stays
        // within the budget, and one call asked for all along stays.
        let n = 4 * BUDGET / OVERHEAD;
        for i in 0..n {
            memo.put(format!("key {i}").as_bytes(), &answer("rule"));
            assert_eq!(memo.get(b"k0"), Some(answer("r0")), "after {i}");
        }
        assert!(memo.len() <= BUDGET / OVERHEAD, "{} entries", memo.len());
        assert!(memo.len() > BUDGET / 1000, "{} entries", memo.len());
        assert_eq!(memo.get(b"key 0"), None);
        assert_eq!(
            memo.get(format!("key {}", n - 1).as_bytes()),
            Some(answer("rule"))
        );
    }
}

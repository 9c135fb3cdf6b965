//! What changed between two decisions on the same calls, grouped, and the
//! four ways to print it (human, json, markdown for a PR comment, GitHub
//! annotations).
//!
//! Memory is bounded by the number of groups — (from, to, rule) triples,
//! so at most three squared times the number of rules — and `--examples`
//! calls each, whatever the length of the input.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::policy::Decision;

/// One call that changed, as shown in examples.
#[derive(Clone, Debug)]
pub struct Example {
    /// The tool, as recorded.
    pub name: String,
    /// Its arguments (redacted with the new policy's rules).
    pub arguments: Map<String, Value>,
}

/// A change: the old decision, the new one, and the rule that made it.
type Change = (Decision, Decision, Option<String>);

#[derive(Default)]
struct Group {
    count: u64,
    examples: Vec<Example>,
}

/// Every change seen so far.
pub struct Report {
    examples: usize,
    total: u64,
    skipped: u64,
    groups: BTreeMap<Change, Group>,
}

impl Report {
    /// An empty report keeping up to `examples` calls per group.
    pub fn new(examples: usize) -> Report {
        Report {
            examples,
            total: 0,
            skipped: 0,
            groups: BTreeMap::new(),
        }
    }

    /// Counts one replayed call: `from` its old decision, `to` the new one
    /// made by `rule`. `example` is only called when the call is kept as an
    /// example, so redaction is paid for a few calls, not all.
    pub fn add(
        &mut self,
        from: Decision,
        to: Decision,
        rule: Option<&str>,
        example: impl FnOnce() -> Example,
    ) {
        self.total += 1;
        if from == to {
            return;
        }
        let key = (from, to, rule.map(str::to_string));
        let group = self.groups.entry(key).or_default();
        group.count += 1;
        if group.examples.len() < self.examples {
            group.examples.push(example());
        }
    }

    /// Counts a call that could not be replayed (see the `skipped` field).
    pub fn skip(&mut self) {
        self.skipped += 1;
    }

    /// Calls replayed.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Calls now decided less strictly than before.
    pub fn loosened(&self) -> u64 {
        self.sum(|from, to| to < from)
    }

    /// Calls now decided more strictly than before.
    pub fn tightened(&self) -> u64 {
        self.sum(|from, to| to > from)
    }

    fn sum(&self, pick: impl Fn(Decision, Decision) -> bool) -> u64 {
        self.groups
            .iter()
            .filter(|((from, to, _), _)| pick(*from, *to))
            .map(|(_, g)| g.count)
            .sum()
    }

    /// Groups, loosened first, then by count.
    fn ordered(&self) -> Vec<(&Change, &Group)> {
        let mut groups: Vec<_> = self.groups.iter().collect();
        groups.sort_by(|(a, ga), (b, gb)| {
            (b.1 < b.0)
                .cmp(&(a.1 < a.0))
                .then(gb.count.cmp(&ga.count))
                .then(a.cmp(b))
        });
        groups
    }

    /// The `--format json` document.
    pub fn to_json(&self) -> Value {
        let changes: Vec<Value> = self
            .ordered()
            .into_iter()
            .map(|((from, to, rule), g)| {
                json!({
                    "from": from, "to": to, "rule": rule, "count": g.count,
                    "examples": g.examples.iter().map(|e| json!({"name": e.name, "arguments": e.arguments})).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "total": self.total,
            "changed": self.loosened() + self.tightened(),
            "loosened": self.loosened(),
            "tightened": self.tightened(),
            "skipped": self.skipped,
            "changes": changes,
        })
    }

    fn summary(&self) -> String {
        let changed = self.loosened() + self.tightened();
        let mut s = format!(
            "{} call{} replayed: {changed} changed ({} loosened, {} tightened)",
            self.total,
            plural(self.total),
            self.loosened(),
            self.tightened()
        );
        if self.skipped > 0 {
            let _ = write!(s, "; {} not replayable", self.skipped);
        }
        s
    }

    /// The `--format human` text.
    pub fn to_human(&self) -> String {
        let mut out = format!("{}\n", self.summary());
        for ((from, to, rule), g) in self.ordered() {
            let tag = if to < from { "LOOSENED" } else { "tightened" };
            let _ = writeln!(
                out,
                "\n{} -> {}  {}  {} call{}  {tag}",
                from.as_str(),
                to.as_str(),
                rule_text(rule),
                g.count,
                plural(g.count)
            );
            for e in &g.examples {
                let _ = writeln!(out, "    {}", example_text(e));
            }
        }
        out
    }

    /// The `--format markdown` text: a pull-request comment.
    pub fn to_markdown(&self) -> String {
        let mut out = format!("### toolgate replay\n\n{}.\n", self.summary());
        if self.groups.is_empty() {
            out.push_str("\nNo recorded call is decided differently.\n");
            return out;
        }
        out.push_str("\n| change | from | to | rule under the new policy | calls |\n|---|---|---|---|---:|\n");
        for ((from, to, rule), g) in self.ordered() {
            let change = if to < from {
                "**loosened**"
            } else {
                "tightened"
            };
            let _ = writeln!(
                out,
                "| {change} | {} | {} | {} | {} |",
                from.as_str(),
                to.as_str(),
                md_code(&rule_text(rule)),
                g.count
            );
        }
        for ((from, to, rule), g) in self.ordered() {
            if g.examples.is_empty() {
                continue;
            }
            let _ = write!(
                out,
                "\n<details><summary>{} -> {} ({}): {} example{}</summary>\n\n",
                from.as_str(),
                to.as_str(),
                rule_text(rule),
                g.examples.len(),
                plural(g.examples.len() as u64)
            );
            for e in &g.examples {
                let _ = writeln!(out, "- {}", md_code(&example_text(e)));
            }
            out.push_str("\n</details>\n");
        }
        out
    }

    /// The `--format github` text: a workflow annotation per group
    /// (`error` for loosened, `warning` for tightened) and a summary notice.
    pub fn to_github(&self) -> String {
        let mut out = String::new();
        for ((from, to, rule), g) in self.ordered() {
            let level = if to < from { "error" } else { "warning" };
            let mut message = format!(
                "{} call{} {} -> {} ({})",
                g.count,
                plural(g.count),
                from.as_str(),
                to.as_str(),
                rule_text(rule)
            );
            if let Some(e) = g.examples.first() {
                let _ = write!(message, ", e.g. {}", example_text(e));
            }
            let _ = writeln!(
                out,
                "::{level} title=toolgate replay::{}",
                escape_annotation(&message)
            );
        }
        let _ = writeln!(
            out,
            "::notice title=toolgate replay::{}",
            escape_annotation(&self.summary())
        );
        out
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn rule_text(rule: &Option<String>) -> String {
    match rule {
        Some(r) => format!("rule {r}"),
        None => "no rule".to_string(),
    }
}

fn example_text(e: &Example) -> String {
    format!("{} {}", e.name, Value::Object(e.arguments.clone()))
}

/// Inline code that survives any backticks inside it.
fn md_code(text: &str) -> String {
    let text = text.replace(['\n', '\r'], " ").replace('|', "\\|");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    format!("{fence} {text} {fence}")
}

/// GitHub's workflow-command escaping for a message.
fn escape_annotation(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

#[cfg(test)]
mod tests {
    use super::*;
    use Decision::*;

    fn ex(command: &str) -> Example {
        let mut arguments = Map::new();
        arguments.insert("command".into(), Value::from(command));
        Example {
            name: "bash".into(),
            arguments,
        }
    }

    #[test]
    fn groups_count_and_keep_the_first_examples() {
        let mut r = Report::new(2);
        r.add(Deny, Allow, None, || ex("a"));
        r.add(Deny, Allow, None, || ex("b"));
        r.add(Deny, Allow, None, || panic!("a third example is not made"));
        r.add(Allow, Deny, Some("no-push"), || ex("git push"));
        r.add(Ask, Ask, Some("x"), || {
            panic!("unchanged calls keep no example")
        });
        let j = r.to_json();
        assert_eq!(j["total"], 5);
        assert_eq!(j["changed"], 4);
        assert_eq!(j["loosened"], 3);
        assert_eq!(j["tightened"], 1);
        // Loosened groups come first.
        assert_eq!(j["changes"][0]["from"], "deny");
        assert_eq!(j["changes"][0]["to"], "allow");
        assert_eq!(j["changes"][0]["count"], 3);
        assert_eq!(j["changes"][0]["examples"].as_array().unwrap().len(), 2);
        assert_eq!(j["changes"][1]["rule"], "no-push");
    }

    #[test]
    fn annotations_escape_percent_signs_and_markdown_escapes_pipes_and_backticks() {
        let mut r = Report::new(1);
        r.add(Deny, Allow, None, || ex("a | 100% `c`"));
        let gh = r.to_github();
        assert!(
            gh.starts_with("::error title=toolgate replay::1 call deny -> allow"),
            "{gh}"
        );
        assert!(gh.contains("100%25") && !gh.contains("100% "), "{gh}");
        assert_eq!(
            gh.lines().count(),
            2,
            "one annotation per group and the summary"
        );
        let md = r.to_markdown();
        assert!(md.contains("\\|") && md.contains("`` "), "{md}");
    }
}

//! Why a call gets its verdict: the same checks [`decide`](super::decide)
//! runs, with every finding kept instead of only the strictest — what
//! `toolgate explain` prints.
//!
//! Nothing here decides on its own: the findings come from
//! `decide::examine` (the one place checks are made and ordered) and the
//! deciding one is picked by [`Strictest`], so an explanation can never
//! disagree with the verdict it explains.

use serde::Serialize;

use super::auth::Identity;
use super::decide::{conclude, examine, gather_as, FindingSource, ToolStatus};
use super::finding::{AuditFinding, Finding, Ranked, Strictest};
use super::paths::PathFact;
use super::{Decision, Policy, ToolCall};
use crate::workspace::{Access, Workspace};

/// The whole reasoning for one call.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// The tool called.
    pub tool: String,
    /// Who the call was decided for (`--identity`), and the profile whose
    /// tools it sees; `None`: a call without authentication.
    pub identity: Option<ExplainedIdentity>,
    /// `active`, `inactive` (described but not in the active set) or
    /// `unknown` (no manifest describes it).
    pub status: &'static str,
    /// The verdict: allow, ask or deny.
    pub decision: Decision,
    /// The deciding rule's id, when a rule decided.
    pub rule: Option<String>,
    /// The verdict's reason.
    pub reason: String,
    /// Whether the batch ends with this call.
    pub terminate: bool,
    /// Why that finding decided.
    pub why: String,
    /// Each simple command of a shell argument, after parsing.
    pub commands: Vec<ExplainedCommand>,
    /// What the shell analyzer could not account for.
    pub unparsed: Vec<String>,
    /// Interpreter code it could not account for.
    pub inline_code: Vec<String>,
    /// Each path argument, resolved.
    pub paths: Vec<ExplainedPath>,
    /// Every finding, in the order checks made them.
    pub findings: Vec<ExplainedFinding>,
    /// The index in `findings` of the one that decided.
    pub decided_by: Option<usize>,
    /// What audit-only entries (`mode: audit`) would have decided.
    pub audit: Vec<AuditFinding>,
}

/// The caller a call is explained for.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainedIdentity {
    /// Its id (what `rules[].identities` match).
    pub id: String,
    /// Its profile (one of `tools.profiles`); `None`: the active set.
    pub profile: Option<String>,
}

/// One simple command as the policy sees it.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainedCommand {
    /// Its words after quote removal, wrappers and `VAR=value` prefixes
    /// taken off (a wrapper is a command of its own, before the one it runs).
    pub words: Vec<String>,
    /// True for a wrapper (`env`, `timeout`, `sudo`, a shell's `-c`) whose
    /// wrapped command follows.
    pub wrapper: bool,
    /// The files it names (operands and redirections), resolved.
    pub files: Vec<ExplainedPath>,
    /// Indices into the explanation's `findings` about this command.
    pub findings: Vec<usize>,
}

/// One path, as written and where it leads.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainedPath {
    /// Where it came from: an argument, an operand, a redirection.
    pub source: String,
    /// As written.
    pub raw: String,
    /// `read` or `write`.
    pub access: &'static str,
    /// Absolute, `~`, `.` and `..` folded, symlinks not followed.
    pub lexical: Option<String>,
    /// Absolute, symlinks followed as far as the path exists.
    pub real: Option<String>,
    /// True when a symlink on the way leads elsewhere (`lexical` != `real`).
    pub through_symlink: bool,
    /// Why it cannot be resolved, when it cannot.
    pub error: Option<String>,
}

/// One finding and where it came from.
#[derive(Clone, Debug, Serialize)]
pub struct ExplainedFinding {
    /// The check: `argument`, `path argument \`path\``, `command 1 (rm)`, …
    pub source: String,
    /// What it decided.
    pub decision: Decision,
    /// The rule id.
    pub rule: String,
    /// Its reason.
    pub reason: String,
    /// The policy file that holds the rule, when one does.
    pub file: Option<String>,
    /// The rule's key path in that file (`commands.deny.3`); `toolgate
    /// explain` turns it into a line.
    pub at: Option<String>,
    /// Whether it also ends the batch.
    pub terminate: bool,
}

fn path(fact: &PathFact) -> ExplainedPath {
    let (lexical, real, error) = match &fact.resolved {
        Ok(r) => (
            Some(r.lexical.display().to_string()),
            Some(r.real.display().to_string()),
            None,
        ),
        Err(e) => (None, None, Some(e.clone())),
    };
    ExplainedPath {
        source: fact.source.to_string(),
        raw: fact.raw.clone(),
        access: match fact.access {
            Access::Read => "read",
            Access::Write => "write",
        },
        through_symlink: lexical.is_some() && lexical != real,
        lexical,
        real,
        error,
    }
}

/// A finding's place, so [`Strictest`] can pick among indices.
struct Ranking(usize, Decision, bool);

impl Ranked for Ranking {
    fn decision(&self) -> Decision {
        self.1
    }
    fn terminates(&self) -> bool {
        self.2
    }
}

impl Policy {
    /// Explains the verdict [`Policy::evaluate_in`] gives `call`.
    pub fn explain(&self, ws: &Workspace, call: &ToolCall, workdir: Option<&str>) -> Explanation {
        self.explain_as(ws, call, workdir, None)
    }

    /// Explains the verdict `call` gets when `identity` makes it: its
    /// profile's tools are the active ones, and rules scoped to it apply
    /// ([`gather_as`]).
    pub fn explain_as(
        &self,
        ws: &Workspace,
        call: &ToolCall,
        workdir: Option<&str>,
        identity: Option<&Identity>,
    ) -> Explanation {
        let facts = gather_as(self, ws, call, workdir, identity);
        let mut found: Vec<(FindingSource, Finding)> = Vec::new();
        let mut audit = Vec::new();
        let early = examine(self, ws, &facts, &mut |s, f| found.push((s, f)), &mut audit);
        let mut pick = Strictest::new();
        for (i, (_, f)) in found.iter().enumerate() {
            pick.offer(Ranking(i, f.decision, f.terminate));
        }
        let decided_by = pick.into_inner().map(|r| r.0);
        let decided_early = early.is_some();
        let verdict = match early {
            Some(v) => v,
            None => conclude(
                self,
                &facts,
                decided_by.map(|i| found[i].1.clone()),
                audit.clone(),
            ),
        };
        let status = match facts.status {
            ToolStatus::Active => "active",
            ToolStatus::Inactive => "inactive",
            ToolStatus::Unknown => "unknown",
        };
        let shell = facts.shell.as_ref();
        let mut commands: Vec<ExplainedCommand> = shell
            .map(|s| {
                s.analysis
                    .commands
                    .iter()
                    .zip(&s.files)
                    .map(|(cmd, files)| ExplainedCommand {
                        words: cmd.words.clone(),
                        wrapper: cmd.is_wrapper,
                        files: files.iter().map(path).collect(),
                        findings: Vec::new(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let program = |i: usize| {
            shell
                .and_then(|s| s.analysis.commands.get(i))
                .map(|c| c.program().to_string())
                .unwrap_or_default()
        };
        let findings: Vec<ExplainedFinding> = found
            .iter()
            .enumerate()
            .map(|(n, (source, f))| {
                let source = match *source {
                    FindingSource::Arguments => "arguments".to_string(),
                    FindingSource::Path(i) => format!("path {}", facts.paths[i].source),
                    FindingSource::CommandLimit => "command size".to_string(),
                    FindingSource::Unparsed => "shell analysis".to_string(),
                    FindingSource::InlineCode => "interpreter code".to_string(),
                    FindingSource::Command(i) => {
                        commands[i].findings.push(n);
                        format!("command {} (`{}`)", i + 1, program(i))
                    }
                    FindingSource::CommandPath(i, j) => {
                        commands[i].findings.push(n);
                        format!(
                            "command {} (`{}`) path `{}`",
                            i + 1,
                            program(i),
                            commands[i].files[j].raw
                        )
                    }
                    FindingSource::Rule => "argument rule".to_string(),
                };
                let rule = f.rule.to_string();
                let origin = self.rule_origin(&rule);
                ExplainedFinding {
                    source,
                    decision: f.decision,
                    reason: f.reason.clone(),
                    file: origin.map(|o| o.file.clone()),
                    at: origin.map(|o| o.at.clone()),
                    terminate: f.terminate,
                    rule,
                }
            })
            .collect();
        let why = match (decided_early, decided_by) {
            (true, _) => match facts.status {
                ToolStatus::Unknown => {
                    "no manifest describes the tool: `tools.unknown` decides".to_string()
                }
                ToolStatus::Inactive => {
                    "the tool is not in the active set (`tools.active` / the profile)".to_string()
                }
                ToolStatus::Active => "the arguments are not a JSON object".to_string(),
            },
            (false, None) => "no check objected, so the call is allowed".to_string(),
            (false, Some(i)) => {
                let level = found[i].1.decision;
                let same: Vec<usize> = (0..found.len())
                    .filter(|j| found[*j].1.decision == level)
                    .collect();
                if same.len() == 1 {
                    format!("the strictest finding (deny beats ask beats allow), and the only one at `{}`", level.as_str())
                } else if same[0] == i {
                    format!("the strictest finding (deny beats ask beats allow), and the first of {} at `{}`", same.len(), level.as_str())
                } else {
                    format!("the strictest finding (deny beats ask beats allow); of {} at `{}`, a later one that ends the batch wins over the first", same.len(), level.as_str())
                }
            }
        };
        Explanation {
            tool: facts.tool.clone(),
            identity: identity.map(|i| ExplainedIdentity {
                id: i.id.clone(),
                profile: i.profile.clone(),
            }),
            status,
            decision: verdict.decision,
            rule: verdict.rule,
            reason: verdict.reason,
            terminate: verdict.terminate,
            why,
            commands,
            unparsed: shell
                .map(|s| s.analysis.unparsed.clone())
                .unwrap_or_default(),
            inline_code: shell
                .map(|s| s.analysis.inline_code.clone())
                .unwrap_or_default(),
            paths: facts.paths.iter().map(path).collect(),
            findings,
            decided_by,
            audit: verdict.audit,
        }
    }
}

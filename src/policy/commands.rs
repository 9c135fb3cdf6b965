//! The `commands:` lists: allow, ask and deny patterns for simple commands.
//!
//! Patterns match by words ([`super::shell::CommandPattern`]), never by substring.
//! Allow patterns must match the start of a command (a loose allow would let
//! too much through); ask and deny patterns match their words anywhere in the
//! command's positional words (a loose deny only ever asks too often).

use std::collections::BTreeMap;

use super::finding::{Finding, RuleId};
use super::paths::{PathFact, PathSource};
use super::shell::{
    CommandPattern, CommandSplits, ExecRules, KnownVariables, MatchMode, SimpleCommand,
};
use super::Decision;
use crate::workspace::{resolve, Workspace};

/// One compiled list entry.
#[derive(Clone, Debug)]
pub struct CommandRule {
    /// The words to match.
    pub pattern: CommandPattern,
    /// Rule id reported with decisions.
    pub id: String,
    /// The author's reason, when given.
    pub reason: Option<String>,
    /// When the entry does not apply although the pattern matches.
    pub unless: Unless,
    /// Audit-only (`mode: audit`): recorded, never decisive.
    pub audit: bool,
}

/// A compiled `unless:`: exceptions to one entry.
#[derive(Clone, Debug, Default)]
pub struct Unless {
    /// Flags folded as the pattern folds them (`-n`, `--dry-run`): any one
    /// present lifts the entry.
    pub flags: Vec<String>,
    /// Directories (variables already substituted): every path operand
    /// under one of them lifts the entry.
    pub operands_under: Vec<String>,
}

impl Unless {
    /// True when the exception holds for `cmd` whose path facts are
    /// `files` (operands resolved by the engine, in the command's directory).
    fn holds(
        &self,
        pattern: &CommandPattern,
        cmd: &SimpleCommand,
        ws: &Workspace,
        files: &[PathFact],
    ) -> bool {
        if !self.flags.is_empty() {
            let present = pattern.command_flags(cmd);
            if self.flags.iter().any(|f| present.contains(f)) {
                return true;
            }
        }
        if self.operands_under.is_empty() {
            return false;
        }
        let operands: Vec<&PathFact> = files
            .iter()
            .filter(|f| matches!(f.source, PathSource::Operand(_)))
            .collect();
        if operands.is_empty() {
            return false;
        }
        let dirs: Vec<_> = self
            .operands_under
            .iter()
            .filter_map(|d| resolve(ws, d).ok())
            .collect();
        operands.iter().all(|fact| {
            let Ok(path) = &fact.resolved else {
                return false;
            };
            // Both where the operand is spelled and where it leads must be
            // strictly inside a listed directory (as spelled or resolved):
            // `/tmp/../etc` folds to `/etc`, and `/tmp` itself is not under it.
            // The workspace is never scratch space, even when it lies
            // under a listed directory (a checkout in /tmp).
            let root = ws.root();
            let inside = |p: &std::path::Path| {
                dirs.iter().any(|d| {
                    [&d.lexical, &d.real].iter().any(|dir| {
                        p.starts_with(dir)
                            && p != dir.as_path()
                            && !(root.starts_with(dir) && p.starts_with(root))
                    })
                })
            };
            inside(&path.lexical) && inside(&path.real)
        })
    }
}

/// Every layer's command lists, merged.
#[derive(Clone, Debug)]
pub struct CommandRules {
    /// Allowed commands.
    pub allow: Vec<CommandRule>,
    /// Commands that need approval.
    pub ask: Vec<CommandRule>,
    /// Denied commands.
    pub deny: Vec<CommandRule>,
    /// Decision for what the parser cannot account for.
    pub unparsed: Decision,
    /// Decision for a simple command no list matches.
    pub default: Decision,
    /// Options and variables that make a program run another one: the
    /// shipped table plus `exec_options` / `exec_env` (used by the analyzer).
    pub exec: ExecRules,
    /// `commands.variables`: values set in toolgate's environment (the
    /// analyzer substitutes them) and names that are unset.
    pub variables: KnownVariables,
    /// Decision for interpreter code toolgate cannot account for; None
    /// when no layer sets `commands.inline_code` (then `unparsed` applies).
    pub inline_code: Option<Decision>,
}

impl Default for CommandRules {
    fn default() -> Self {
        CommandRules {
            allow: Vec::new(),
            ask: Vec::new(),
            deny: Vec::new(),
            unparsed: Decision::Deny,
            default: Decision::Ask,
            exec: ExecRules::default(),
            variables: KnownVariables::default(),
            inline_code: None,
        }
    }
}

fn shown(cmd: &SimpleCommand) -> String {
    let mut text = String::new();
    push_shown(&mut text, cmd);
    text
}

/// Appends the command's words as reasons show them: joined by spaces, cut
/// to 120 characters with a `…`.
fn push_shown(out: &mut String, cmd: &SimpleCommand) {
    const MAX: usize = 120;
    let start = out.len();
    for (i, word) in cmd.words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
    if let Some((cut, _)) = out[start..].char_indices().nth(MAX) {
        out.truncate(start + cut);
        out.push('…');
    }
}

/// `` `<command as shown>`<rest…> ``, built in one buffer (reasons are made
/// for every decision, so without `format!`'s machinery).
fn reason_about(cmd: &SimpleCommand, rest: &[&str]) -> String {
    let mut reason = String::with_capacity(
        2 + rest.iter().map(|p| p.len()).sum::<usize>() + 8 * cmd.words.len(),
    );
    reason.push('`');
    push_shown(&mut reason, cmd);
    for part in rest {
        reason.push_str(part);
    }
    reason
}

fn deny_finding(rule: &CommandRule, cmd: &SimpleCommand) -> Finding {
    let reason = match &rule.reason {
        Some(r) => reason_about(cmd, &["` is denied by rule ", &rule.id, ": ", r]),
        None => reason_about(
            cmd,
            &[
                "` is denied by this policy (it matches `",
                rule.pattern.as_str(),
                "`). Do not run it; find another way that does not need it.",
            ],
        ),
    };
    Finding::new(Decision::Deny, RuleId::Named(rule.id.clone()), reason)
}

fn ask_finding(rule: &CommandRule, cmd: &SimpleCommand) -> Finding {
    let reason = match &rule.reason {
        Some(r) => reason_about(cmd, &["` needs approval (rule ", &rule.id, "): ", r]),
        None => reason_about(
            cmd,
            &[
                "` needs a person's approval under this policy (it matches `",
                rule.pattern.as_str(),
                "`).",
            ],
        ),
    };
    Finding::new(Decision::Ask, RuleId::Named(rule.id.clone()), reason)
}

fn allow_finding(rule: &CommandRule, cmd: &SimpleCommand) -> Finding {
    Finding::new(
        Decision::Allow,
        RuleId::Named(rule.id.clone()),
        reason_about(
            cmd,
            &["` is allowed (it matches `", rule.pattern.as_str(), "`)"],
        ),
    )
}

impl CommandRules {
    /// Judges one simple command. `None` for a wrapper (`env`, `sudo`, …) that
    /// no deny or ask pattern names: the wrapped command is judged on its own.
    /// `files` are the command's resolved path facts (for
    /// `unless.operands_under`).
    pub fn judge<'r, 'c>(
        &'r self,
        cmd: &'c SimpleCommand,
        ws: &Workspace,
        files: &[PathFact],
    ) -> Option<Finding> {
        let mut splits: CommandSplits<'c, 'r> = CommandSplits::default();
        let mut applies = |r: &&'r CommandRule, mode: MatchMode| {
            !r.audit
                && r.pattern.matches_in(cmd, mode, &mut splits)
                && !r.unless.holds(&r.pattern, cmd, ws, files)
        };
        if let Some(rule) = self.deny.iter().find(|r| applies(r, MatchMode::Anywhere)) {
            return Some(deny_finding(rule, cmd));
        }
        if let Some(rule) = self.ask.iter().find(|r| applies(r, MatchMode::Anywhere)) {
            return Some(ask_finding(rule, cmd));
        }
        if cmd.is_wrapper {
            return None;
        }
        if let Some(rule) = self.allow.iter().find(|r| applies(r, MatchMode::Prefix)) {
            return Some(allow_finding(rule, cmd));
        }
        let reason = match self.default {
            Decision::Allow => format!("`{}` matches no command list; the policy allows it by default", shown(cmd)),
            Decision::Ask => format!(
                "`{}` is not on the policy's allow list, so it needs a person's approval",
                shown(cmd)
            ),
            Decision::Deny => format!(
                "`{}` is not on the policy's allow list, and this policy denies everything else. Use an allowed command.",
                shown(cmd)
            ),
        };
        Some(Finding::new(self.default, RuleId::CommandsDefault, reason))
    }

    /// What the audit-only entries (`mode: audit`) that match `cmd` would
    /// decide, each as its list would (deny and ask entries anywhere in the
    /// command, allow entries at its start).
    pub fn audit<'r, 'c>(
        &'r self,
        cmd: &'c SimpleCommand,
        ws: &Workspace,
        files: &[PathFact],
    ) -> Vec<Finding> {
        let mut splits: CommandSplits<'c, 'r> = CommandSplits::default();
        let mut applies = |r: &&'r CommandRule, mode: MatchMode| {
            r.audit
                && r.pattern.matches_in(cmd, mode, &mut splits)
                && !r.unless.holds(&r.pattern, cmd, ws, files)
        };
        let mut out: Vec<Finding> = Vec::new();
        out.extend(
            self.deny
                .iter()
                .filter(|r| applies(r, MatchMode::Anywhere))
                .map(|r| deny_finding(r, cmd)),
        );
        out.extend(
            self.ask
                .iter()
                .filter(|r| applies(r, MatchMode::Anywhere))
                .map(|r| ask_finding(r, cmd)),
        );
        out.extend(
            self.allow
                .iter()
                .filter(|r| applies(r, MatchMode::Prefix))
                .map(|r| allow_finding(r, cmd)),
        );
        out
    }

    /// How many command entries are audit-only.
    pub fn audit_entries(&self) -> usize {
        [&self.allow, &self.ask, &self.deny]
            .iter()
            .map(|list| list.iter().filter(|r| r.audit).count())
            .sum()
    }

    /// The finding for interpreter code the analyzer could not fully
    /// account for (`reasons` name what): `commands.inline_code`, or
    /// `commands.unparsed` when no layer sets it.
    pub fn judge_inline(&self, reasons: &[String]) -> Finding {
        let decision = self.inline_code.unwrap_or(self.unparsed);
        let what = reasons.join("; ");
        let reason = match decision {
            Decision::Allow => format!("Interpreter code ({what}); the policy allows inline code"),
            Decision::Ask => format!(
                "Interpreter code that toolgate cannot fully check ({what}) needs a person's approval. Shell commands and file operations in it are checked either way."
            ),
            Decision::Deny => format!(
                "Interpreter code that toolgate cannot fully check ({what}) is denied by this policy. Run the shell commands directly instead."
            ),
        };
        Finding::new(decision, RuleId::CommandsInlineCode, reason)
    }

    /// The finding for a script the analyzer could not fully account for.
    pub fn judge_unparsed(&self, reasons: &[String]) -> Finding {
        let what = reasons.join("; ");
        let reason = match self.unparsed {
            Decision::Allow => format!("The command could not be fully analyzed ({what}); the policy allows that"),
            Decision::Ask => format!(
                "The command could not be fully analyzed ({what}), so it needs a person's approval. Plain commands joined by &&, ||, ; or | can be checked automatically."
            ),
            Decision::Deny => format!(
                "The command could not be fully analyzed ({what}), and this policy denies what it cannot check. Rewrite it as plain commands joined by &&, ||, ; or |, without substitutions or variables."
            ),
        };
        Finding::new(self.unparsed, RuleId::CommandsUnparsed, reason)
    }
}

/// True for a shell variable name: a letter or `_`, then letters, digits, `_`.
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The values of `names` in toolgate's own environment: (set, unset).
/// A value that is empty or not UTF-8 counts as unset.
pub fn known_variables(names: &[String]) -> (BTreeMap<String, String>, Vec<String>) {
    let mut set = BTreeMap::new();
    let mut unset = Vec::new();
    for name in names {
        if !is_variable_name(name) || set.contains_key(name) || unset.contains(name) {
            continue;
        }
        match std::env::var(name) {
            Ok(v) if !v.is_empty() => {
                set.insert(name.clone(), v);
            }
            _ => unset.push(name.clone()),
        }
    }
    (set, unset)
}

/// Substitutes a leading `$NAME` / `${NAME}` in an `operands_under` entry:
/// Ok(None) when NAME is listed in `commands.variables` but unset; an error
/// when it is not listed.
pub fn substitute_dir(
    dir: &str,
    listed: &[String],
    values: &BTreeMap<String, String>,
) -> Result<Option<String>, String> {
    let Some(rest) = dir.strip_prefix('$') else {
        if dir.contains('$') {
            return Err(format!(
                "`{dir}` has a `$` that is not at its start: only a leading `$NAME` is substituted"
            ));
        }
        return Ok(Some(dir.to_string()));
    };
    let (name, tail) = if let Some(braced) = rest.strip_prefix('{') {
        match braced.split_once('}') {
            Some(parts) => parts,
            None => return Err(format!("`{dir}` has a `${{` without its `}}`")),
        }
    } else {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        rest.split_at(end)
    };
    if !is_variable_name(name) || tail.contains('$') {
        return Err(format!("`{dir}` does not start with a variable name"));
    }
    if !listed.iter().any(|l| l == name) {
        return Err(format!(
            "`{dir}` names the variable `{name}`, which is not in `commands.variables`"
        ));
    }
    Ok(values.get(name).map(|v| format!("{v}{tail}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str, reason: Option<&str>) -> CommandRule {
        CommandRule {
            pattern: CommandPattern::parse(pattern).unwrap(),
            id: "the-id".into(),
            reason: reason.map(str::to_string),
            unless: Unless::default(),
            audit: false,
        }
    }

    /// The reasons are built without `format!`; these are the texts they
    /// replaced, word for word, for short commands and for ones cut at 120
    /// characters (some of them two or three bytes long).
    #[test]
    fn reasons_read_as_the_format_strings_did() {
        fn old_shown(cmd: &SimpleCommand) -> String {
            let text = cmd.words.join(" ");
            if text.chars().count() > 120 {
                let cut: String = text.chars().take(120).collect();
                format!("{cut}…")
            } else {
                text
            }
        }
        let commands = [
            vec![],
            vec!["rm".to_string(), "-rf".into(), "build".into()],
            vec!["echo".to_string(), "é".repeat(119)],
            vec!["echo".to_string(), "é".repeat(115)],
            vec!["echo".to_string(), "€".repeat(200), "x".into()],
            vec!["a".repeat(120)],
            vec!["a".repeat(121)],
        ];
        for words in commands {
            let cmd = SimpleCommand::new(words);
            let s = old_shown(&cmd);
            assert_eq!(shown(&cmd), s);
            for reason in [None, Some("why")] {
                let r = rule("rm -rf", reason);
                let (deny, ask) = match reason {
                    Some(why) => (
                        format!("`{s}` is denied by rule the-id: {why}"),
                        format!("`{s}` needs approval (rule the-id): {why}"),
                    ),
                    None => (
                        format!("`{s}` is denied by this policy (it matches `rm -rf`). Do not run it; find another way that does not need it."),
                        format!("`{s}` needs a person's approval under this policy (it matches `rm -rf`)."),
                    ),
                };
                assert_eq!(deny_finding(&r, &cmd).reason, deny);
                assert_eq!(ask_finding(&r, &cmd).reason, ask);
                assert_eq!(
                    allow_finding(&r, &cmd).reason,
                    format!("`{s}` is allowed (it matches `rm -rf`)")
                );
            }
        }
    }
}

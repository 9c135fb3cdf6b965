//! The `commands:` lists: allow, ask and deny patterns for simple commands.
//!
//! Patterns match by words ([`super::shell::CommandPattern`]), never by substring.
//! Allow patterns must match the start of a command (a loose allow would let
//! too much through); ask and deny patterns match their words anywhere in the
//! command's positional words (a loose deny only ever asks too often).

use super::finding::{Finding, RuleId};
use super::shell::{CommandPattern, ExecRules, MatchMode, SimpleCommand};
use super::Decision;

/// One compiled list entry.
#[derive(Clone, Debug)]
pub struct CommandRule {
    /// The words to match.
    pub pattern: CommandPattern,
    /// Rule id reported with decisions.
    pub id: String,
    /// The author's reason, when given.
    pub reason: Option<String>,
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
        }
    }
}

fn shown(cmd: &SimpleCommand) -> String {
    const MAX: usize = 120;
    let text = cmd.words.join(" ");
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        text
    }
}

impl CommandRules {
    /// Judges one simple command. `None` for a wrapper (`env`, `sudo`, …) that
    /// no deny or ask pattern names: the wrapped command is judged on its own.
    pub fn judge(&self, cmd: &SimpleCommand) -> Option<Finding> {
        if let Some(rule) = self
            .deny
            .iter()
            .find(|r| r.pattern.matches(cmd, MatchMode::Anywhere))
        {
            let reason = match &rule.reason {
                Some(r) => format!("`{}` is denied by rule {}: {r}", shown(cmd), rule.id),
                None => format!(
                    "`{}` is denied by this policy (it matches `{}`). Do not run it; find another way that does not need it.",
                    shown(cmd),
                    rule.pattern.as_str()
                ),
            };
            return Some(Finding::new(
                Decision::Deny,
                RuleId::Named(rule.id.clone()),
                reason,
            ));
        }
        if let Some(rule) = self
            .ask
            .iter()
            .find(|r| r.pattern.matches(cmd, MatchMode::Anywhere))
        {
            let reason = match &rule.reason {
                Some(r) => format!("`{}` needs approval (rule {}): {r}", shown(cmd), rule.id),
                None => format!(
                    "`{}` needs a person's approval under this policy (it matches `{}`).",
                    shown(cmd),
                    rule.pattern.as_str()
                ),
            };
            return Some(Finding::new(
                Decision::Ask,
                RuleId::Named(rule.id.clone()),
                reason,
            ));
        }
        if cmd.is_wrapper {
            return None;
        }
        if let Some(rule) = self
            .allow
            .iter()
            .find(|r| r.pattern.matches(cmd, MatchMode::Prefix))
        {
            return Some(Finding::new(
                Decision::Allow,
                RuleId::Named(rule.id.clone()),
                format!(
                    "`{}` is allowed (it matches `{}`)",
                    shown(cmd),
                    rule.pattern.as_str()
                ),
            ));
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

//! What one check finds, what a call's verdict is, and the one reduction
//! from many findings to one verdict.
//!
//! Every front-end that combines findings (one call's checks, or the calls
//! an agent CLI's patch maps to) uses [`Strictest`], so "deny beats ask
//! beats allow; at one level the first found stands, unless a later one also
//! ends the batch" is written down once.

use serde::Serialize;

use super::Decision;

/// Which rule a finding comes from. `Display` gives the id `eval` prints
/// and the decision log records (`paths.deny[**/.env]`, `no-force-push`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleId {
    /// A rule of the policy's own, by its id (`rules[].id`, a command
    /// entry's `id` or the one derived from its pattern).
    Named(String),
    /// `tools.active`: the tool is not active.
    ToolsActive,
    /// `tools.unknown`: no manifest describes the tool.
    ToolsUnknown,
    /// `paths.resolve`: a path that cannot be resolved or is not a string.
    PathsResolve,
    /// `paths.roots`: outside the workspace roots.
    PathsRoots,
    /// `paths.deny[GLOB]`.
    PathsDeny(String),
    /// `paths.read_only[GLOB]`.
    PathsReadOnly(String),
    /// `commands.default`: a command on no list.
    CommandsDefault,
    /// `commands.unparsed`: what the analyzer cannot account for.
    CommandsUnparsed,
    /// `commands.inline_code`: interpreter code the analyzer cannot account for.
    CommandsInlineCode,
    /// A limit (`limits.max_argument_bytes`, `commands.too_complex`, …).
    Limit(&'static str),
}

impl RuleId {
    /// The id as text, without copying a named rule's id.
    pub fn into_string(self) -> String {
        match self {
            RuleId::Named(id) => id,
            RuleId::PathsDeny(glob) => ["paths.deny[", &glob, "]"].concat(),
            RuleId::PathsReadOnly(glob) => ["paths.read_only[", &glob, "]"].concat(),
            other => other.to_string(),
        }
    }
}

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RuleId::Named(id) => f.write_str(id),
            RuleId::ToolsActive => f.write_str("tools.active"),
            RuleId::ToolsUnknown => f.write_str("tools.unknown"),
            RuleId::PathsResolve => f.write_str("paths.resolve"),
            RuleId::PathsRoots => f.write_str("paths.roots"),
            RuleId::PathsDeny(glob) => write!(f, "paths.deny[{glob}]"),
            RuleId::PathsReadOnly(glob) => write!(f, "paths.read_only[{glob}]"),
            RuleId::CommandsDefault => f.write_str("commands.default"),
            RuleId::CommandsUnparsed => f.write_str("commands.unparsed"),
            RuleId::CommandsInlineCode => f.write_str("commands.inline_code"),
            RuleId::Limit(id) => f.write_str(id),
        }
    }
}

/// The result of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What the check decided.
    pub decision: Decision,
    /// The rule that decided it.
    pub rule: RuleId,
    /// Why, for the model.
    pub reason: String,
    /// Whether it also ends the batch.
    pub terminate: bool,
}

impl Finding {
    /// A finding that does not terminate.
    pub fn new(decision: Decision, rule: RuleId, reason: impl Into<String>) -> Finding {
        Finding {
            decision,
            rule,
            reason: reason.into(),
            terminate: false,
        }
    }
}

/// The before-hook's answer for one call: exactly what `toolgate eval` prints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// allow, ask or deny.
    pub decision: Decision,
    /// Why, in words a model can act on.
    pub reason: String,
    /// The id of the deciding rule, `null` when no rule decided.
    pub rule: Option<String>,
    /// Whether the batch ends with this call.
    pub terminate: bool,
    /// What the policy's audit entries (`mode: audit`) would have decided;
    /// never part of the decision. Absent from JSON when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub audit: Vec<AuditFinding>,
}

/// A finding of an audit-only entry: recorded, never decisive.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuditFinding {
    /// What the entry would decide.
    pub decision: Decision,
    /// The entry's rule id.
    pub rule: String,
    /// Its reason.
    pub reason: String,
}

impl From<Finding> for AuditFinding {
    fn from(f: Finding) -> AuditFinding {
        AuditFinding {
            decision: f.decision,
            rule: f.rule.into_string(),
            reason: f.reason,
        }
    }
}

impl Verdict {
    /// allow, ask or deny.
    pub fn decision(&self) -> Decision {
        self.decision
    }

    /// Why, in words a model can act on.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The id of the deciding rule, when a rule decided.
    pub fn rule(&self) -> Option<&str> {
        self.rule.as_deref()
    }

    /// Whether the batch ends with this call.
    pub fn terminates(&self) -> bool {
        self.terminate
    }

    /// A deny by `rule` (a verdict no check produced, e.g. an unusable call).
    pub fn deny(rule: Option<RuleId>, reason: impl Into<String>) -> Verdict {
        Verdict {
            decision: Decision::Deny,
            reason: reason.into(),
            rule: rule.map(RuleId::into_string),
            terminate: false,
            audit: Vec::new(),
        }
    }
}

impl From<Finding> for Verdict {
    fn from(f: Finding) -> Verdict {
        Verdict {
            decision: f.decision,
            reason: f.reason,
            rule: Some(f.rule.into_string()),
            terminate: f.terminate,
            audit: Vec::new(),
        }
    }
}

/// Keeps the strictest of what it is offered: deny beats ask beats allow;
/// at one level the first offered stands, unless a later one also ends the
/// batch (a terminating finding says more).
#[derive(Clone, Debug)]
pub struct Strictest<T> {
    best: Option<T>,
}

/// What [`Strictest`] compares.
pub trait Ranked {
    /// The decision.
    fn decision(&self) -> Decision;
    /// Whether it ends the batch.
    fn terminates(&self) -> bool;
}

impl Ranked for Finding {
    fn decision(&self) -> Decision {
        self.decision
    }
    fn terminates(&self) -> bool {
        self.terminate
    }
}

impl Ranked for Verdict {
    fn decision(&self) -> Decision {
        self.decision
    }
    fn terminates(&self) -> bool {
        self.terminate
    }
}

impl<T> Default for Strictest<T> {
    fn default() -> Self {
        Strictest { best: None }
    }
}

impl<T: Ranked> Strictest<T> {
    /// Nothing offered yet.
    pub fn new() -> Strictest<T> {
        Strictest::default()
    }

    /// Offers one more; keeps it when it is stricter than what is held.
    pub fn offer(&mut self, candidate: T) {
        let better = match &self.best {
            None => true,
            Some(b) => {
                candidate.decision() > b.decision()
                    || (candidate.decision() == b.decision()
                        && candidate.terminates()
                        && !b.terminates())
            }
        };
        if better {
            self.best = Some(candidate);
        }
    }

    /// The strictest offered, if any.
    pub fn into_inner(self) -> Option<T> {
        self.best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(decision: Decision, rule: &str, terminate: bool) -> Finding {
        Finding {
            decision,
            rule: RuleId::Named(rule.to_string()),
            reason: String::new(),
            terminate,
        }
    }

    #[test]
    fn deny_beats_ask_beats_allow_and_the_first_at_a_level_stands() {
        let mut s = Strictest::new();
        s.offer(f(Decision::Allow, "a", false));
        s.offer(f(Decision::Ask, "b", false));
        s.offer(f(Decision::Ask, "c", false));
        s.offer(f(Decision::Allow, "d", true));
        assert_eq!(s.into_inner().unwrap().rule.to_string(), "b");
        let mut s = Strictest::new();
        s.offer(f(Decision::Deny, "x", false));
        s.offer(f(Decision::Ask, "y", true));
        assert_eq!(s.into_inner().unwrap().rule.to_string(), "x");
    }

    #[test]
    fn rule_ids_print_as_the_policy_names_them() {
        assert_eq!(
            RuleId::PathsDeny("**/.env".into()).to_string(),
            "paths.deny[**/.env]"
        );
        assert_eq!(
            RuleId::PathsReadOnly("a".into()).to_string(),
            "paths.read_only[a]"
        );
        assert_eq!(RuleId::CommandsUnparsed.to_string(), "commands.unparsed");
        assert_eq!(
            RuleId::Limit("limits.max_argument_bytes").to_string(),
            "limits.max_argument_bytes"
        );
        assert_eq!(
            RuleId::Named("no-force-push".into()).to_string(),
            "no-force-push"
        );
    }

    #[test]
    fn at_one_level_a_terminating_finding_wins() {
        let mut s = Strictest::new();
        s.offer(f(Decision::Deny, "x", false));
        s.offer(f(Decision::Deny, "y", true));
        s.offer(f(Decision::Deny, "z", true));
        assert_eq!(s.into_inner().unwrap().rule.to_string(), "y");
        assert!(Strictest::<Finding>::new().into_inner().is_none());
    }
}

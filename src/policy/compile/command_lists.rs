//! `commands:` compiled: the allow / ask / deny lists with their patterns
//! parsed (FILE:LINE:COL for one that does not parse), `unless:` conditions,
//! and the scalar decisions (`default`, `unparsed`, `inline_code`) taking the
//! strictest layer's value.

use super::{exec, Compiler};
use crate::config::diagnostics::Diagnostic;
use crate::config::policy_file::{CommandEntry, UnlessSpec};
use crate::config::PolicyLayer;
use crate::policy::commands::{self, CommandRule, CommandRules, Unless};
use crate::policy::shell::CommandPattern;
use crate::policy::Decision;

impl Compiler {
    pub(super) fn commands(&mut self, layers: &[PolicyLayer]) -> CommandRules {
        let mut rules = CommandRules::default();
        let (mut unparsed, mut default) = (None::<Decision>, None::<Decision>);
        let mut inline_code = None::<Decision>;
        let mut listed = Vec::new();
        for layer in layers {
            if let Some(c) = &layer.policy.commands {
                listed.extend(c.variables.iter().cloned());
            }
        }
        let (variables, unset) = commands::known_variables(&listed);
        for layer in layers {
            let Some(c) = &layer.policy.commands else {
                continue;
            };
            for (i, name) in c.variables.iter().enumerate() {
                if !commands::is_variable_name(name) {
                    self.err(
                        layer,
                        &format!("commands.variables.{i}"),
                        format!("`{name}` is not a variable name"),
                        "write the name without `$`, e.g. `TMPDIR`",
                    );
                }
            }
            for (list, entries, into) in [
                ("allow", &c.allow, &mut rules.allow),
                ("ask", &c.ask, &mut rules.ask),
                ("deny", &c.deny, &mut rules.deny),
            ] {
                for (i, entry) in entries.iter().enumerate() {
                    // Where the entry is, for diagnostics and origins only.
                    let at = || format!("commands.{list}.{i}");
                    let exact = matches!(entry, CommandEntry::Detailed(d) if d.exact);
                    match CommandPattern::parse_with(entry.pattern(), exact) {
                        Ok(pattern) => {
                            // The object form is taken as written for the new
                            // reading; a plain string may predate it.
                            if pattern.has_double_dash()
                                && matches!(entry, CommandEntry::Pattern(_))
                            {
                                let pos = layer.map.value(&at());
                                self.warnings.push(Diagnostic::new(&layer.file.name, pos, format!("command pattern `{}` in `commands.{list}` contains `--`, which is now a word the command must contain (before, it was dropped and the pattern matched without it)", entry.pattern()))
                                    .with_help("to match only commands that have `--` (e.g. `git checkout -- FILE`), write the entry as `{ pattern: \"…\" }`, which silences this warning; remove the `--` to match the program with any arguments"));
                            }
                            let (id, reason) = match entry {
                                CommandEntry::Pattern(p) => {
                                    (["commands.", list, "[", p, "]"].concat(), None)
                                }
                                CommandEntry::Detailed(d) => (
                                    d.id.clone().unwrap_or_else(|| {
                                        ["commands.", list, "[", &d.pattern, "]"].concat()
                                    }),
                                    d.reason.clone(),
                                ),
                            };
                            let unless = match entry {
                                CommandEntry::Detailed(d) => match &d.unless {
                                    Some(u) => {
                                        self.unless(layer, &at(), &pattern, u, &listed, &variables)
                                    }
                                    None => Unless::default(),
                                },
                                CommandEntry::Pattern(_) => Unless::default(),
                            };
                            let mode = match entry {
                                CommandEntry::Detailed(d) => d.mode,
                                CommandEntry::Pattern(_) => None,
                            };
                            if !self.skip_origins {
                                self.origin(&id, layer, &at());
                            }
                            into.push(CommandRule {
                                pattern,
                                id,
                                reason,
                                unless,
                                audit: self.is_audit(layer, mode),
                            });
                        }
                        Err(e) => {
                            let pos = layer.map.value(&at());
                            self.diags.push(Diagnostic::new(&layer.file.name, pos, format!("invalid command pattern `{}` in `commands.{list}`: {e}", entry.pattern()))
                                .with_help("write one simple command per entry, as words: e.g. `git push --force`"));
                        }
                    }
                }
            }
            // The strictest setting decides; name the first layer that has it.
            for (key, set, so_far) in [
                ("commands.unparsed", c.unparsed, unparsed),
                ("commands.default", c.default, default),
                ("commands.inline_code", c.inline_code, inline_code),
            ] {
                if set.is_some() && set > so_far {
                    self.origins.retain(|(id, _)| id != key);
                    self.origin(key, layer, key);
                }
            }
            unparsed = unparsed.max(c.unparsed);
            default = default.max(c.default);
            inline_code = inline_code.max(c.inline_code);
        }
        rules.unparsed = unparsed.unwrap_or(Decision::Deny);
        rules.default = default.unwrap_or(Decision::Ask);
        rules.inline_code = inline_code;
        rules.variables = crate::policy::shell::KnownVariables {
            values: variables,
            unset,
        };
        rules.exec = exec::compile_exec(layers, &mut self.diags);
        rules
    }

    /// Compiles one entry's `unless:`; problems are reported at `at.unless`.
    pub(super) fn unless(
        &mut self,
        layer: &PolicyLayer,
        at: &str,
        pattern: &CommandPattern,
        spec: &UnlessSpec,
        listed: &[String],
        variables: &std::collections::BTreeMap<String, String>,
    ) -> Unless {
        let mut out = Unless::default();
        for (i, flag) in spec.flags.iter().enumerate() {
            match pattern.fold_policy_flag(flag) {
                Some(folded) => out.flags.push(folded),
                None => self.err(
                    layer,
                    &format!("{at}.unless.flags.{i}"),
                    format!("`{flag}` is not a single flag"),
                    "write one flag per item, as the command spells it: `-n`, `--dry-run`",
                ),
            }
        }
        for (i, dir) in spec.operands_under.iter().enumerate() {
            match commands::substitute_dir(dir, listed, variables) {
                Ok(Some(resolved)) => out.operands_under.push(resolved),
                // A listed variable that is unset: nothing is under it.
                Ok(None) => {}
                Err(e) => self.err(
                    layer,
                    &format!("{at}.unless.operands_under.{i}"),
                    e,
                    "list the variable in `commands.variables`, or write the directory itself",
                ),
            }
        }
        out
    }
}

//! `[extend]`: a gitleaks config built on another one.
//!
//! `useDefault = true` extends gitleaks' default config as gitleaks 8.30.1
//! does (`config.extend`): every default rule not in `disabledRules` is
//! added; a rule of this file with a default rule's id is merged into it (its
//! regex, entropy and secret group, where given, replace the default's; its
//! keywords and allowlists are added), and every file-wide allowlist of
//! either file applies to every rule. `path` and `url` (another file) are not
//! followed: list that file in `redact.gitleaks` instead.

use std::ops::Range;

use toml::Spanned;

use super::{parse, Ctx, GitleaksImport, DEFAULT_CONFIG};
use crate::policy::redact::rules::{AllowlistSpec, SecretGroup};

/// What a file's `[extend]` asks for.
#[derive(Default)]
pub(super) struct Extension {
    /// gitleaks' default config, parsed, when `useDefault = true`.
    base: Option<GitleaksImport>,
    /// `disabledRules`, with where each is written.
    disabled: Vec<(String, Range<usize>)>,
    /// Where `[extend]` is: the position given to the default rules.
    at: Range<usize>,
}

/// Reads the `[extend]` table; a bad key or value is an error.
pub(super) fn read(cx: &mut Ctx<'_>, table: &Spanned<toml::Table>) -> Extension {
    let mut ext = Extension {
        at: table.span(),
        ..Extension::default()
    };
    let mut use_default = false;
    for (key, value) in table.get_ref() {
        match (key.as_str(), value) {
            ("useDefault", toml::Value::Boolean(b)) => use_default = *b,
            ("disabledRules", toml::Value::Array(ids)) => {
                for id in ids {
                    match id.as_str() {
                        Some(id) => ext.disabled.push((id.to_string(), table.span())),
                        None => cx.error(
                            table.span(),
                            None,
                            "`[extend] disabledRules` must be a list of rule ids (strings)"
                                .to_string(),
                        ),
                    }
                }
            }
            ("path" | "url", toml::Value::String(other)) => cx.warn(
                table.span(),
                None,
                format!("`[extend] {key} = \"{other}\"` is not followed; list that file in `redact.gitleaks` to import it too"),
                false,
            ),
            ("useDefault" | "disabledRules" | "path" | "url", _) => cx.error(
                table.span(),
                None,
                format!("`[extend] {key}` has the wrong type: `useDefault` is a boolean, `disabledRules` a list of strings, `path` and `url` strings"),
            ),
            (other, _) => cx.error(
                table.span(),
                None,
                format!("unknown key `{other}` in `[extend]`; expected `useDefault`, `disabledRules`, `path` or `url`"),
            ),
        }
    }
    if use_default {
        match parse(DEFAULT_CONFIG) {
            Ok(base) => ext.base = Some(base),
            // The shipped copy is checked by a test; fail closed all the same.
            Err(issues) => cx.error(
                table.span(),
                None,
                format!(
                    "gitleaks' default config does not load: {}",
                    issues
                        .first()
                        .map_or("unknown error", |i| i.message.as_str())
                ),
            ),
        }
    } else if !ext.disabled.is_empty() {
        cx.warn(
            table.span(),
            None,
            "`[extend] disabledRules` does nothing without `useDefault = true`".to_string(),
            false,
        );
    }
    ext
}

impl Extension {
    /// Whether the extended default config has a rule `id`.
    pub(super) fn base_has(&self, id: &str) -> bool {
        self.base
            .as_ref()
            .is_some_and(|b| b.rules.iter().any(|r| r.id == id))
    }

    /// Merges this file's rules (`out`) into the default config's, as
    /// gitleaks does; `targeted` are this file's allowlists aimed at rules
    /// by id.
    pub(super) fn apply(
        self,
        cx: &mut Ctx<'_>,
        out: &mut GitleaksImport,
        targeted: &[(String, AllowlistSpec)],
    ) {
        let Some(base) = self.base else {
            return;
        };
        for (id, span) in &self.disabled {
            if !base.rules.iter().any(|r| &r.id == id) {
                cx.warn(
                    span.clone(),
                    None,
                    format!("`[extend] disabledRules` names `{id}`, which is not a rule of gitleaks' default config"),
                    false,
                );
            }
        }
        let at = cx.at(self.at.clone());
        for w in &base.warnings {
            cx.warn(
                self.at.clone(),
                w.rule.as_deref(),
                format!("gitleaks' default config: {}", w.message),
                w.unsupported,
            );
        }
        let own_global = out.allowlists.clone();
        let mut current: Vec<_> = std::mem::take(&mut out.rules)
            .into_iter()
            .zip(std::mem::take(&mut out.positions))
            .map(Some)
            .collect();
        for mut rule in base.rules {
            if self.disabled.iter().any(|(id, _)| *id == rule.id) {
                continue;
            }
            let mine = current
                .iter_mut()
                .find(|c| c.as_ref().is_some_and(|(c, _)| c.id == rule.id))
                .and_then(Option::take);
            let pos = match mine {
                Some((mine, pos)) => {
                    if !mine.regex.is_empty() {
                        rule.regex = mine.regex;
                    }
                    if mine.entropy.is_some() {
                        rule.entropy = mine.entropy;
                    }
                    if mine.secret_group != SecretGroup::FirstNonEmpty {
                        rule.secret_group = mine.secret_group;
                    }
                    rule.keywords.extend(mine.keywords);
                    // Already holds this file's global and targeted allowlists.
                    rule.allowlists.extend(mine.allowlists);
                    pos
                }
                None => {
                    rule.allowlists.extend(own_global.iter().cloned());
                    rule.allowlists.extend(
                        targeted
                            .iter()
                            .filter(|(t, _)| *t == rule.id)
                            .map(|(_, a)| a.clone()),
                    );
                    at
                }
            };
            out.rules.push(rule);
            out.positions.push(pos);
        }
        for (mut rule, pos) in current.into_iter().flatten() {
            rule.allowlists.extend(base.allowlists.iter().cloned());
            out.rules.push(rule);
            out.positions.push(pos);
        }
        out.allowlists.extend(base.allowlists);
    }
}

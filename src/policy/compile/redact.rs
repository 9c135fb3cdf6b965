//! The `redact:` sections of all layers -> one [`LazyRedactor`], with the
//! gitleaks files they import read, checked and reported at their positions.

use std::path::Path;

use super::err_at;
use crate::config::diagnostics::{Diagnostic, Diagnostics, Position};
use crate::config::policy_file::{
    AllowlistTarget, RedactAllowlistConfig, RedactRuleConfig, UnsupportedRules,
};
use crate::config::PolicyLayer;
use crate::policy::redact::gitleaks::{self, GitleaksIssue};
use crate::policy::redact::{
    AllowTarget, AllowlistSpec, KeywordScope, LazyRedactor, RedactRuleSpec, SecretGroup,
};

/// A gitleaks file bigger than this is refused: gitleaks' own default
/// config is about 100 KB.
const MAX_GITLEAKS_BYTES: u64 = 4 << 20;

/// What compiling the redact sections gives.
pub(super) struct Redaction {
    /// `None` when a rule failed (reported in the diagnostics).
    pub redactor: Option<LazyRedactor>,
    /// Imported rules skipped and config parts ignored.
    pub warnings: Vec<Diagnostic>,
    /// The imported files' texts, for the policy version hash.
    pub sources: Vec<String>,
    /// The imported files' names (listed with the policy's files, and so
    /// watched for reloads).
    pub files: Vec<String>,
}

/// Where a rule was declared, to place its diagnostics.
enum Origin {
    Policy { layer: usize, index: usize },
    Imported { file: String, pos: Position },
}

pub(super) fn compile(layers: &[PolicyLayer], diags: &mut Diagnostics) -> Redaction {
    let mut defaults = false;
    let mut strict = false;
    let mut specs = Vec::new();
    let mut imported = Vec::new();
    let mut origins: Vec<(String, Origin)> = Vec::new();
    let mut allowlists = Vec::new();
    let mut warnings = Vec::new();
    let mut sources = Vec::new();
    let mut files = Vec::new();
    for layer in layers {
        if let Some(r) = &layer.policy.redact {
            strict |= r.unsupported == Some(UnsupportedRules::Error);
        }
    }
    for (li, layer) in layers.iter().enumerate() {
        let Some(r) = &layer.policy.redact else {
            continue;
        };
        defaults |= r.defaults.unwrap_or(false);
        if let Some(a) = &r.allowlist {
            let spec = allowlist(a);
            match spec.check() {
                Ok(()) => allowlists.push(spec),
                Err(e) => err_at(
                    diags,
                    layer,
                    "redact.allowlist",
                    format!("redact.allowlist: {e}"),
                    "fix the regex (Rust `regex` syntax) or remove the empty stopword",
                ),
            }
        }
        for (i, rule) in r.rules.iter().enumerate() {
            specs.push(policy_rule(rule));
            origins.push((
                rule.id.clone(),
                Origin::Policy {
                    layer: li,
                    index: i,
                },
            ));
        }
        for (i, path) in r.gitleaks.iter().enumerate() {
            let at = format!("redact.gitleaks.{i}");
            let Some(dir) = layer
                .file
                .path
                .as_deref()
                .map(|p| p.parent().unwrap_or(Path::new(".")))
            else {
                err_at(diags, layer, &at, "`redact.gitleaks` in an embedded policy has no folder to resolve paths against", "put the policy in a file");
                continue;
            };
            let file = dir.join(path);
            let name = file.display().to_string();
            let text = match read(&file) {
                Ok(t) => {
                    files.push(name.clone());
                    t
                }
                Err(e) => {
                    err_at(
                        diags,
                        layer,
                        &at,
                        format!("gitleaks config `{path}` ({name}): {e}"),
                        "give a path relative to this policy file",
                    );
                    continue;
                }
            };
            match gitleaks::parse(&text) {
                Err(issues) => {
                    for issue in issues {
                        diags.push(issue_diagnostic(&name, &issue, "fix the gitleaks config"));
                    }
                }
                Ok(import) => {
                    for issue in &import.warnings {
                        let d = issue_diagnostic(&name, issue, help_for(issue));
                        if strict && issue.unsupported {
                            diags.push(d);
                        } else {
                            warnings.push(d);
                        }
                    }
                    for (rule, pos) in import.rules.into_iter().zip(import.positions) {
                        origins.push((
                            rule.id.clone(),
                            Origin::Imported {
                                file: name.clone(),
                                pos,
                            },
                        ));
                        imported.push(rule);
                    }
                }
            }
            sources.push(text);
        }
    }
    let redactor = match LazyRedactor::with_imports(defaults, specs, imported, allowlists) {
        Ok(r) => {
            // A clash is not an error (gitleaks' stock config reuses 27 of
            // the built-in ids), but a reviewer should know two rules now
            // answer to one name.
            for id in r.clashes() {
                let at = origins.iter().find_map(|(rid, o)| match o {
                    Origin::Imported { file, pos } if *rid == id => Some((file, *pos)),
                    _ => None,
                });
                if let Some((file, pos)) = at {
                    warnings.push(
                        Diagnostic::new(
                            file,
                            pos,
                            format!("gitleaks rule `{id}` has the id of a built-in rule: both run, and what either finds is redacted as `[REDACTED:{id}]`"),
                        )
                        .with_help("nothing to do; rename the rule in the gitleaks file to tell the two apart in output"),
                    );
                }
            }
            Some(r)
        }
        Err(errors) => {
            for e in errors {
                match origins.iter().rev().find(|(id, _)| *id == e.id) {
                    Some((_, Origin::Policy { layer, index })) => err_at(
                        diags,
                        &layers[*layer],
                        &format!("redact.rules.{index}"),
                        format!("redaction rule `{}`: {}", e.id, e.message),
                        "fix the rule's regex, keywords, secret_group, entropy or allowlist",
                    ),
                    Some((_, Origin::Imported { file, pos })) => diags.push(
                        Diagnostic::new(
                            file,
                            *pos,
                            format!("gitleaks rule `{}`: {}", e.id, e.message),
                        )
                        .with_help("rename or remove the rule"),
                    ),
                    None => diags.push(Diagnostic::new(
                        "<embedded>",
                        Position::default(),
                        format!("redaction rule `{}`: {}", e.id, e.message),
                    )),
                }
            }
            None
        }
    };
    Redaction {
        redactor,
        warnings,
        sources,
        files,
    }
}

fn read(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if meta.len() > MAX_GITLEAKS_BYTES {
        return Err(format!(
            "file is {} bytes; the limit is {MAX_GITLEAKS_BYTES}",
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "file is not valid UTF-8".to_string())
}

fn issue_diagnostic(file: &str, issue: &GitleaksIssue, help: &str) -> Diagnostic {
    Diagnostic::new(file, issue.pos, issue.message.clone()).with_help(help)
}

fn help_for(issue: &GitleaksIssue) -> &'static str {
    if issue.unsupported {
        "rewrite the regex without look-around or backreferences (Rust's regex runs in linear time), or accept that this rule does not run"
    } else {
        "nothing to do unless you relied on it; redaction stays on the safe side"
    }
}

fn policy_rule(rule: &RedactRuleConfig) -> RedactRuleSpec {
    RedactRuleSpec {
        id: rule.id.clone(),
        regex: rule.regex.clone(),
        keywords: rule.keywords.iter().map(|k| k.to_lowercase()).collect(),
        secret_group: SecretGroup::from(rule.secret_group),
        entropy: rule.entropy,
        allowlists: rule.allowlist.iter().map(allowlist).collect(),
        continuation: None,
        keyword_scope: KeywordScope::Match,
    }
}

fn allowlist(a: &RedactAllowlistConfig) -> AllowlistSpec {
    AllowlistSpec {
        regexes: a.regexes.clone(),
        stopwords: a.stopwords.clone(),
        target: match a.target {
            Some(AllowlistTarget::Match) => AllowTarget::Match,
            Some(AllowlistTarget::Secret) | None => AllowTarget::Secret,
        },
        require_all: false,
    }
}

//! Importing gitleaks configs (`redact.gitleaks: [path]`).
//!
//! A gitleaks config is TOML: `[[rules]]` with `id`, `regex`, `secretGroup`,
//! `entropy`, `keywords` and allowlists (`[rules.allowlist]` or
//! `[[rules.allowlists]]`), plus file-wide `[allowlist]` / `[[allowlists]]`
//! (with `targetRules`). Its regexes are Go (RE2) syntax. They are
//! translated, not just copied: Go's `\d`, `\w`, `\s` and `\b` are ASCII-only,
//! Rust's are Unicode-aware, so they become `[[:digit:]]`, `[[:word:]]`,
//! `[[:space:]]` and `(?-u:\b)` — the same meaning, and smaller automata.
//!
//! What does not translate is reported, never dropped in silence:
//! - a broken file (TOML syntax, wrong types, unknown keys, a rule without an
//!   id or regex, a duplicate id) is an error at its `LINE:COL`: fail closed;
//! - a regex Rust's `regex` crate cannot run (look-around, backreferences,
//!   possessive or atomic groups, `\Q…\E`, …) or one that is too large is
//!   *unsupported*: the rule is skipped with a warning naming the rule and
//!   the reason, so a stock gitleaks config still loads (a policy can turn
//!   these into errors with `redact.unsupported: error`);
//! - parts that do not apply to a text stream (`path` conditions, `commits`
//!   and `paths` allowlists, `required` rules, `[extend] path`) are warned
//!   about; where they narrow a rule, dropping them redacts more, never less.
//!
//! `[extend] useDefault = true` extends gitleaks' default config, shipped
//! with toolgate ([`DEFAULT_CONFIG`]), as gitleaks does (see `extend`).

use serde::Deserialize;
use toml::Spanned;

use super::rules::{
    check_syntax, AllowTarget, AllowlistSpec, KeywordScope, RedactRuleSpec, SecretGroup,
};
use super::syntax::ascii_perl_classes;
use crate::config::parse::position_of;
use crate::config::Position;

mod extend;

/// A problem found in a gitleaks file, at its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitleaksIssue {
    /// Where in the gitleaks file.
    pub pos: Position,
    /// The rule concerned, if any.
    pub rule: Option<String>,
    /// What is wrong or was left out.
    pub message: String,
    /// True for a rule skipped because its regex cannot run here (as
    /// opposed to a part of the config that does not apply to text streams).
    pub unsupported: bool,
}

/// The rules a gitleaks file yields, and what was left out of it.
#[derive(Clone, Debug, Default)]
pub struct GitleaksImport {
    /// Rules that will run, in file order (with `[extend] useDefault`,
    /// gitleaks' default rules first).
    pub rules: Vec<RedactRuleSpec>,
    /// Where each of `rules` is declared (a default rule: at `[extend]`).
    pub positions: Vec<Position>,
    /// Rules skipped and parts ignored, as warnings.
    pub warnings: Vec<GitleaksIssue>,
    /// The file-wide allowlists (already part of every rule's allowlists).
    pub allowlists: Vec<AllowlistSpec>,
}

/// gitleaks' default config (`config/gitleaks.toml` of gitleaks 8.30.1,
/// MIT licence: see `data/LICENSE-gitleaks`), which `[extend] useDefault =
/// true` extends, as gitleaks itself does with the copy built into it.
pub const DEFAULT_CONFIG: &str = include_str!("../data/gitleaks-8.30.1.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileToml {
    #[serde(default)]
    #[allow(dead_code)]
    title: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    min_version: Option<String>,
    #[serde(default)]
    extend: Option<Spanned<toml::Table>>,
    #[serde(default)]
    rules: Vec<Spanned<RuleToml>>,
    #[serde(default)]
    allowlist: Option<Spanned<AllowToml>>,
    #[serde(default)]
    allowlists: Vec<Spanned<AllowToml>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RuleToml {
    id: Option<Spanned<String>>,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    regex: Option<Spanned<String>>,
    #[serde(default)]
    secret_group: Option<Spanned<i64>>,
    #[serde(default)]
    entropy: Option<Spanned<f64>>,
    #[serde(default)]
    keywords: Vec<Spanned<String>>,
    #[serde(default)]
    #[allow(dead_code)]
    tags: Vec<String>,
    #[serde(default)]
    path: Option<Spanned<String>>,
    #[serde(default)]
    allowlist: Option<Spanned<AllowToml>>,
    #[serde(default)]
    allowlists: Vec<Spanned<AllowToml>>,
    #[serde(default)]
    required: Option<Spanned<toml::Value>>,
    #[serde(default)]
    skip_report: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AllowToml {
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
    #[serde(default)]
    condition: Option<Spanned<String>>,
    #[serde(default)]
    commits: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    regex_target: Option<Spanned<String>>,
    #[serde(default)]
    regexes: Vec<Spanned<String>>,
    #[serde(default, alias = "stopWords")]
    stopwords: Vec<String>,
    #[serde(default)]
    target_rules: Vec<Spanned<String>>,
}

struct Ctx<'a> {
    text: &'a str,
    /// Byte offset of each line's start: a position per rule must not cost a
    /// scan of the file each.
    lines: Vec<usize>,
    errors: Vec<GitleaksIssue>,
    warnings: Vec<GitleaksIssue>,
}

impl Ctx<'_> {
    fn at(&self, span: std::ops::Range<usize>) -> Position {
        let byte = span.start.min(self.text.len());
        let line = self.lines.partition_point(|&start| start <= byte);
        let start = self.lines[line - 1];
        Position {
            line,
            col: self.text[start..byte].chars().count() + 1,
        }
    }
    fn error(&mut self, span: std::ops::Range<usize>, rule: Option<&str>, message: String) {
        let pos = self.at(span);
        self.errors.push(GitleaksIssue {
            pos,
            rule: rule.map(str::to_string),
            message,
            unsupported: false,
        });
    }
    fn warn(
        &mut self,
        span: std::ops::Range<usize>,
        rule: Option<&str>,
        message: String,
        unsupported: bool,
    ) {
        let pos = self.at(span);
        self.warnings.push(GitleaksIssue {
            pos,
            rule: rule.map(str::to_string),
            message,
            unsupported,
        });
    }
}

/// Parses a gitleaks config. `Err` holds every error (the file is broken);
/// `Ok` holds the rules and the warnings about what was left out.
pub fn parse(text: &str) -> Result<GitleaksImport, Vec<GitleaksIssue>> {
    let file: FileToml = toml::from_str(text).map_err(|e| {
        let pos = e
            .span()
            .map(|s| position_of(text, s.start))
            .unwrap_or_default();
        vec![GitleaksIssue {
            pos,
            rule: None,
            message: format!("invalid gitleaks config: {}", e.message().trim()),
            unsupported: false,
        }]
    })?;
    let lines = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let mut cx = Ctx {
        text,
        lines,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let extension = match &file.extend {
        Some(table) => extend::read(&mut cx, table),
        None => extend::Extension::default(),
    };
    if file.allowlist.is_some() && !file.allowlists.is_empty() {
        let span = file.allowlists[0].span();
        cx.error(
            span,
            None,
            "`[allowlist]` and `[[allowlists]]` cannot be used together".to_string(),
        );
    }
    // File-wide allowlists, and those aimed at particular rules.
    let mut global: Vec<AllowlistSpec> = Vec::new();
    let mut targeted: Vec<(Spanned<String>, AllowlistSpec)> = Vec::new();
    for a in file.allowlist.iter().chain(&file.allowlists) {
        let Some(spec) = allowlist(&mut cx, a, None) else {
            continue;
        };
        if a.get_ref().target_rules.is_empty() {
            global.push(spec);
        } else {
            for t in &a.get_ref().target_rules {
                targeted.push((t.clone(), spec.clone()));
            }
        }
    }

    let mut out = GitleaksImport::default();
    let mut seen: Vec<String> = Vec::new();
    for r in &file.rules {
        let rule = r.get_ref();
        let Some(id) = &rule.id else {
            cx.error(r.span(), None, "rule has no `id`".to_string());
            continue;
        };
        let id_str = id.get_ref().as_str();
        if id_str.is_empty() {
            cx.error(id.span(), None, "rule `id` is empty".to_string());
            continue;
        }
        if seen.iter().any(|s| s == id_str) {
            cx.error(
                id.span(),
                Some(id_str),
                format!("duplicate rule id `{id_str}`"),
            );
            continue;
        }
        seen.push(id_str.to_string());
        let patch = extension.base_has(id_str);
        if let Some(spec) = import_rule(&mut cx, r, id, &global, &targeted, patch) {
            out.positions.push(cx.at(r.span()));
            out.rules.push(spec);
        }
    }
    for (target, _) in &targeted {
        if !seen.contains(target.get_ref()) && !extension.base_has(target.get_ref()) {
            cx.error(
                target.span(),
                None,
                format!(
                    "allowlist `targetRules` names `{}`, which is not a rule of this file",
                    target.get_ref()
                ),
            );
        }
    }
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let targeted: Vec<(String, AllowlistSpec)> = targeted
        .into_iter()
        .map(|(t, a)| (t.into_inner(), a))
        .collect();
    out.allowlists = global;
    extension.apply(&mut cx, &mut out, &targeted);
    out.warnings = cx.warnings;
    Ok(out)
}

fn import_rule(
    cx: &mut Ctx<'_>,
    r: &Spanned<RuleToml>,
    id: &Spanned<String>,
    global: &[AllowlistSpec],
    targeted: &[(Spanned<String>, AllowlistSpec)],
    patch: bool,
) -> Option<RedactRuleSpec> {
    let rule = r.get_ref();
    let id_str = id.get_ref().as_str();
    // Extending a default rule: its regex may be left out (kept from the default).
    let patch_regex = Spanned::new(r.span(), String::new());
    let regex = match &rule.regex {
        None if patch && rule.path.is_none() => Some(&patch_regex),
        other => other.as_ref(),
    };
    let Some(regex) = regex else {
        if let Some(path) = &rule.path {
            cx.warn(
                path.span(),
                Some(id_str),
                format!("rule `{id_str}` is skipped: it only matches file paths, and redaction sees text"),
                false,
            );
        } else {
            cx.error(
                r.span(),
                Some(id_str),
                format!("rule `{id_str}` has no `regex`"),
            );
        }
        return None;
    };
    if let Some(path) = &rule.path {
        cx.warn(
            path.span(),
            Some(id_str),
            format!("rule `{id_str}`: its `path` condition is ignored (text has no path); the regex applies to all text"),
            false,
        );
    }
    if let Some(req) = &rule.required {
        cx.warn(
            req.span(),
            Some(id_str),
            format!("rule `{id_str}`: `required` rules are ignored; the rule redacts on its own"),
            false,
        );
    }
    if let Some(skip) = &rule.skip_report {
        if *skip.get_ref() {
            cx.warn(
                skip.span(),
                Some(id_str),
                format!("rule `{id_str}`: `skipReport` is ignored; its matches are redacted"),
                false,
            );
        }
    }
    let secret_group = match &rule.secret_group {
        None => SecretGroup::FirstNonEmpty,
        Some(g) if *g.get_ref() < 0 => {
            cx.error(
                g.span(),
                Some(id_str),
                format!("rule `{id_str}`: `secretGroup` must not be negative"),
            );
            return None;
        }
        Some(g) if *g.get_ref() == 0 => SecretGroup::FirstNonEmpty,
        Some(g) => SecretGroup::Index(*g.get_ref() as usize),
    };
    let mut allowlists: Vec<AllowlistSpec> = global.to_vec();
    if rule.allowlist.is_some() && !rule.allowlists.is_empty() {
        cx.error(
            rule.allowlists[0].span(),
            Some(id_str),
            format!("rule `{id_str}`: `[rules.allowlist]` and `[[rules.allowlists]]` cannot be used together"),
        );
        return None;
    }
    for a in rule.allowlist.iter().chain(&rule.allowlists) {
        if let Some(spec) = allowlist(cx, a, Some(id_str)) {
            allowlists.push(spec);
        }
    }
    allowlists.extend(
        targeted
            .iter()
            .filter(|(t, _)| t.get_ref() == id_str)
            .map(|(_, a)| a.clone()),
    );
    let spec = RedactRuleSpec {
        id: id_str.to_string(),
        regex: go_literal_braces(regex.get_ref()),
        keywords: rule
            .keywords
            .iter()
            .map(|k| k.get_ref().to_lowercase())
            .filter(|k| !k.is_empty())
            .collect(),
        secret_group,
        entropy: rule.entropy.as_ref().map(|e| *e.get_ref()),
        allowlists,
        continuation: None,
        // gitleaks asks only that a keyword occur in the text around a match.
        keyword_scope: KeywordScope::Near,
    };
    let check = if spec.regex.is_empty() {
        Ok(())
    } else {
        check_syntax(&spec)
    };
    if let Err(reason) = check {
        let span = if reason.starts_with("entropy") {
            rule.entropy.as_ref().map_or(regex.span(), |e| e.span())
        } else {
            regex.span()
        };
        cx.warn(
            span,
            Some(id_str),
            format!("rule `{id_str}` is skipped: it cannot run here: {reason}"),
            true,
        );
        return None;
    }
    Some(spec)
}

fn allowlist(
    cx: &mut Ctx<'_>,
    a: &Spanned<AllowToml>,
    rule: Option<&str>,
) -> Option<AllowlistSpec> {
    let al = a.get_ref();
    let require_all = match al
        .condition
        .as_ref()
        .map(|c| c.get_ref().to_ascii_uppercase())
    {
        None => false,
        Some(c) if c.is_empty() || c == "OR" || c == "||" => false,
        Some(c) if c == "AND" || c == "&&" => true,
        Some(c) => {
            let span = al.condition.as_ref().map_or(a.span(), |c| c.span());
            cx.error(
                span,
                rule,
                format!("unknown allowlist `condition` `{c}`; expected `OR` or `AND`"),
            );
            return None;
        }
    };
    let target = match al.regex_target.as_ref().map(|t| t.get_ref().as_str()) {
        None | Some("") | Some("secret") => AllowTarget::Secret,
        Some("match") => AllowTarget::Match,
        Some("line") => AllowTarget::Line,
        Some(other) => {
            let span = al.regex_target.as_ref().map_or(a.span(), |t| t.span());
            cx.error(
                span,
                rule,
                format!("unknown allowlist `regexTarget` `{other}`; expected `secret`, `match` or `line`"),
            );
            return None;
        }
    };
    let has_file_checks = !al.paths.is_empty() || !al.commits.is_empty();
    if has_file_checks {
        cx.warn(
            a.span(),
            rule,
            "allowlist `paths` and `commits` do not apply to tool output and are ignored"
                .to_string(),
            false,
        );
        // Under AND, a check that can never hold means the allowlist never applies.
        if require_all {
            return None;
        }
    }
    let mut regexes = Vec::new();
    for r in &al.regexes {
        let pattern = go_literal_braces(r.get_ref());
        match ascii_perl_classes(&pattern) {
            Ok(_) => regexes.push(pattern),
            Err(reason) => cx.warn(
                r.span(),
                rule,
                format!("allowlist regex is skipped: it is not supported: {reason}"),
                true,
            ),
        }
    }
    if regexes.is_empty() && al.stopwords.is_empty() {
        if al.regexes.is_empty() && !has_file_checks {
            cx.error(
                a.span(),
                rule,
                "allowlist must contain at least one check: regexes, stopwords, paths or commits"
                    .to_string(),
            );
        }
        return None;
    }
    Some(AllowlistSpec {
        regexes,
        stopwords: al.stopwords.clone(),
        target,
        require_all,
    })
}

/// Escapes each `{` that does not start a repetition: Go reads `{x}` or a
/// lone `{` as literal text, the `regex` crate as a broken repetition.
pub fn go_literal_braces(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len());
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                // `\p{Greek}`, `\P{L}`, `\x{263a}`: the braces belong to the
                // escape in both dialects; copy it whole.
                let braced = matches!(chars.get(i + 1), Some('p' | 'P' | 'x'))
                    && chars.get(i + 2) == Some(&'{');
                let close = braced
                    .then(|| (i + 3..chars.len()).find(|&k| chars[k] == '}'))
                    .flatten();
                let stop = match close {
                    Some(k) => k + 1,
                    None => (i + 2).min(chars.len()),
                };
                out.extend(&chars[i..stop]);
                i = stop;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` right after `[` or `[^` is a member, not the end.
                let mut j = i + 1;
                if chars.get(j) == Some(&'^') {
                    out.push('^');
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    out.push(']');
                    j += 1;
                }
                i = j;
                continue;
            }
            '[' if chars.get(i + 1) == Some(&':') => {
                // `[:alpha:]` inside a class.
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&k| chars[k] == ':' && chars[k + 1] == ']');
                let stop = end.map_or(i + 1, |k| k + 2);
                out.extend(&chars[i..stop]);
                i = stop;
                continue;
            }
            ']' if in_class => in_class = false,
            '{' if !in_class && !is_repetition(&chars[i + 1..]) => {
                out.push_str("\\{");
                i += 1;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Whether `rest` (after a `{`) is `n}`, `n,}` or `n,m}`.
fn is_repetition(rest: &[char]) -> bool {
    let digits = |s: &[char]| s.iter().take_while(|c| c.is_ascii_digit()).count();
    let n = digits(rest);
    if n == 0 {
        return false;
    }
    match rest.get(n) {
        Some('}') => true,
        Some(',') => {
            let m = digits(&rest[n + 1..]);
            rest.get(n + 1 + m) == Some(&'}')
        }
        _ => false,
    }
}

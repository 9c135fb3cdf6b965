//! Load and compile errors that point at `FILE:LINE:COL` and say what to change.
//!
//! Every stage of loading collects diagnostics instead of stopping at the first
//! problem, so one `toolgate check` run shows a policy author everything that is
//! wrong with their files.

use std::fmt;

use serde::Serialize;

/// A position in a source file: 1-based line and column.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Position {
    /// 1-based line number.
    pub line: usize,
    /// 1-based column number.
    pub col: usize,
}

/// One problem found while loading or compiling policy files and manifests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The file the problem is in, as given on the command line (or `<embedded>/NAME`).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong, naming the offending field, tool, rule or value.
    pub message: String,
    /// What to change, when there is something specific to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at `pos` in `file`.
    pub fn new(file: &str, pos: Position, message: impl Into<String>) -> Self {
        Diagnostic {
            file: file.to_string(),
            line: pos.line.max(1),
            col: pos.col.max(1),
            message: message.into(),
            help: None,
        }
    }

    /// Adds the "what to change" part.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.render(f, "error")
    }
}

impl Diagnostic {
    fn render(&self, f: &mut impl fmt::Write, level: &str) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {level}: {}",
            self.file, self.line, self.col, self.message
        )?;
        if let Some(help) = &self.help {
            write!(f, "\n  help: {help}")?;
        }
        Ok(())
    }
}

/// All problems of one load, in the order they were found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Records a problem.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.0.push(diagnostic);
    }

    /// True when nothing went wrong.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of problems.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Iterates the problems.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// Moves every problem of `other` into `self`.
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }

    /// Renders for people: one `FILE:LINE:COL: error: …` block per problem.
    pub fn to_human(&self) -> String {
        let mut out = String::new();
        for d in &self.0 {
            out.push_str(&d.to_string());
            out.push('\n');
        }
        out
    }

    /// Renders as a JSON array of `{file, line, col, message, help}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.0).unwrap_or_else(|_| "[]".to_string())
    }

    /// Renders as GitHub Actions workflow commands, so CI shows each problem
    /// as an annotation on the offending line.
    pub fn to_github(&self) -> String {
        self.github("error")
    }

    /// Renders problems that did not stop the load: `FILE:LINE:COL: warning: …`.
    pub fn to_human_warnings(&self) -> String {
        let mut out = String::new();
        for d in &self.0 {
            let _ = d.render(&mut out, "warning");
            out.push('\n');
        }
        out
    }

    /// Like [`Diagnostics::to_github`], as `::warning` annotations.
    pub fn to_github_warnings(&self) -> String {
        self.github("warning")
    }

    fn github(&self, level: &str) -> String {
        let mut out = String::new();
        for d in &self.0 {
            let mut message = d.message.clone();
            if let Some(help) = &d.help {
                message.push_str(" — ");
                message.push_str(help);
            }
            out.push_str(&format!(
                "::{level} file={},line={},col={},title=toolgate::{}\n",
                escape_property(&d.file),
                d.line,
                d.col,
                escape_data(&message)
            ));
        }
        out
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.to_human().trim_end())
    }
}

impl std::error::Error for Diagnostics {}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Diagnostics(vec![d])
    }
}

// GitHub's workflow-command escaping: data and property values differ.
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The closest of `candidates` to `word`, for "did you mean `commands`?" hints.
pub fn did_you_mean<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    candidates
        .iter()
        .map(|c| (edit_distance(&word, c), *c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_nearest_field() {
        let fields = ["version", "extends", "tools", "paths", "commands", "rules"];
        assert_eq!(did_you_mean("comands", &fields), Some("commands"));
        assert_eq!(did_you_mean("tool", &fields), Some("tools"));
        assert_eq!(did_you_mean("zzzzzzzz", &fields), None);
    }

    #[test]
    fn github_format_escapes_newlines_and_commas() {
        let d = Diagnostic::new("a,b.yaml", Position { line: 3, col: 5 }, "bad\nthing");
        let out = Diagnostics(vec![d]).to_github();
        assert_eq!(
            out,
            "::error file=a%2Cb.yaml,line=3,col=5,title=toolgate::bad%0Athing\n"
        );
    }
}

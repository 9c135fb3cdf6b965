//! Conditions, as written in policy files: the `when:` of `rules:` (tests on
//! a call's arguments) and of `results:` (which may also test the result).
//! Shared by both formats, so there is one condition language.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A condition on arguments: either one argument with one test, or a
/// combination (`all`, `any`, `not`). In `results:` rules a condition may
/// also be one result test: `output`, `is_error` or `exit_code`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// The argument tested.
    #[serde(default)]
    pub arg: Option<String>,
    /// The argument equals this value.
    #[serde(default)]
    pub equals: Option<serde_json::Value>,
    /// The argument equals one of these values.
    #[serde(default)]
    pub one_of: Option<Vec<serde_json::Value>>,
    /// The (string) argument contains a match of this regex.
    #[serde(default)]
    pub matches: Option<String>,
    /// The (string) argument matches this glob (`*` does not cross `/`).
    #[serde(default)]
    pub glob: Option<String>,
    /// The argument's size is over this many bytes (`1MB`, `512KB`, `100`).
    #[serde(default)]
    pub larger_than: Option<ByteSize>,
    /// The argument is given (true) or not (false).
    #[serde(default)]
    pub present: Option<bool>,
    /// The argument is not given (true) or is (false).
    #[serde(default)]
    pub missing: Option<bool>,
    /// Every condition holds.
    #[serde(default)]
    pub all: Option<Vec<Condition>>,
    /// At least one condition holds.
    #[serde(default)]
    pub any: Option<Vec<Condition>>,
    /// The condition does not hold.
    #[serde(default)]
    pub not: Option<Box<Condition>>,
    /// `results:` only — a test on the result's text.
    #[serde(default)]
    pub output: Option<OutputTestSpec>,
    /// `results:` only — the result is (`true`) or is not (`false`) an error.
    #[serde(default)]
    pub is_error: Option<bool>,
    /// `results:` only — the command exited with this code, or one of these
    /// (bash and exec tools).
    #[serde(default)]
    pub exit_code: Option<ExitCodes>,
}

/// A size such as `1MB`, `512KB`, `2.5 MB` or a plain number of bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ByteSize {
    /// Bytes.
    Bytes(u64),
    /// A number with a unit: B, KB, MB, GB (powers of 1024).
    Text(String),
}

impl ByteSize {
    /// The size in bytes, or what is wrong with the text.
    pub fn bytes(&self) -> Result<u64, String> {
        match self {
            ByteSize::Bytes(n) => Ok(*n),
            ByteSize::Text(t) => parse_byte_size(t),
        }
    }
}

/// Parses `1MB`, `512 KB`, `2.5MB`, `100B`, `100` (powers of 1024).
pub fn parse_byte_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!(
            "`{text}` is not a size; write a number with an optional unit, like `1MB` or `512KB`"
        )
    })?;
    let factor: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit `{other}` in `{text}`; use B, KB, MB or GB"
            ))
        }
    };
    Ok((value * factor as f64) as u64)
}

/// A test on a result's text (after redaction). Exactly one is given.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputTestSpec {
    /// The text contains a match of this regex (Rust `regex` syntax).
    #[serde(default)]
    pub matches: Option<String>,
    /// The text contains this string.
    #[serde(default)]
    pub contains: Option<String>,
    /// The text is bigger than this (`20KB`, `1MB`, `100`).
    #[serde(default)]
    pub larger_than: Option<ByteSize>,
    /// The text has more lines than this.
    #[serde(default)]
    pub lines_over: Option<u64>,
}

/// One exit code or a list of them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ExitCodes {
    /// One code.
    One(i64),
    /// Any of these codes.
    Many(Vec<i64>),
}

impl ExitCodes {
    /// The codes as a list.
    pub fn to_vec(&self) -> Vec<i64> {
        match self {
            ExitCodes::One(c) => vec![*c],
            ExitCodes::Many(cs) => cs.clone(),
        }
    }
}

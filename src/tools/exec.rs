//! Exec tools: a program a manifest declares with
//! `implementation = { exec = ["prog", "--flag", "{arg}"] }`.
//!
//! The program runs directly, never through a shell, so an argument such as
//! `x; rm -rf /` is one literal argv word and nothing interprets it. How
//! placeholders expand:
//! - a word that is exactly `{name}` becomes the argument's value as one
//!   word: a string verbatim, a number or boolean as its JSON text (`3`,
//!   `true`), an object as compact JSON; an array becomes one word per
//!   element (so `["git", "add", "--", "{paths}"]` adds each path);
//! - `{name}` inside a longer word (`--max-count={n}`) is replaced in place
//!   (an array or object as compact JSON);
//! - a word whose argument is absent (or `null`) is left out, unless the
//!   parameter's schema gives a `default`, which is used instead.
//!
//! The program gets the workspace as its working directory and a clean
//! environment holding only the variables `[exec] env` lists (default
//! `PATH`). It runs in its own process group under the policy's timeout,
//! killed as a group like bash. With `output = "text"` (the default) the
//! result is bash's: merged output, tail truncation, `Command exited with
//! code N`. With `output = "content"` stdout is a JSON array of MCP content
//! blocks that becomes the result's content.

use std::ffi::OsString;

use serde_json::{json, Value};

use super::command::{ending_status, run_for_text};
use super::output::{append_status, OutputAccumulator};
use super::process::{self, Ending, Environment, OutputHandler, ProcessSpec, Stream};
use super::{Content, Progress, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use crate::config::manifest::{
    parse_exec_word, ExecOutput, ExecWordPart, Implementation, Manifest,
};
use crate::text::{format_size, truncate_tail};

/// Most stdout a content-mode program may print (images are base64).
pub const MAX_CONTENT_BYTES: usize = 16 * 1024 * 1024;

/// A manifest-declared program.
#[derive(Debug)]
pub struct ExecTool {
    name: String,
    argv: Vec<String>,
    /// Parameter schemas, for `default` values of absent arguments.
    properties: serde_json::Map<String, Value>,
    env: Vec<String>,
    output: ExecOutput,
}

impl ExecTool {
    /// The exec tool a manifest declares; `None` for a built-in manifest.
    pub fn from_manifest(manifest: &Manifest) -> Option<ExecTool> {
        let Implementation::Exec(argv) = &manifest.implementation else {
            return None;
        };
        let options = manifest.exec.clone().unwrap_or_default();
        Some(ExecTool {
            name: manifest.name.clone(),
            argv: argv.clone(),
            properties: manifest
                .parameters
                .get("properties")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            env: options.env.clone(),
            output: options.output,
        })
    }

    /// The argv words for one call (program first).
    pub fn argv_for(&self, args: &Value) -> Vec<String> {
        let mut out = Vec::with_capacity(self.argv.len());
        let mut words = self.argv.iter();
        if let Some(program) = words.next() {
            out.push(program.clone());
        }
        for word in words {
            let parts = parse_exec_word(word);
            if let [ExecWordPart::Arg(name)] = parts.as_slice() {
                match self.value_of(args, name) {
                    Some(Value::Array(items)) => {
                        out.extend(items.iter().filter(|v| !v.is_null()).map(word_text));
                    }
                    Some(v) => out.push(word_text(v)),
                    None => {}
                }
                continue;
            }
            let mut text = String::new();
            let mut complete = true;
            for part in &parts {
                match part {
                    ExecWordPart::Text(t) => text.push_str(t),
                    ExecWordPart::Arg(name) => match self.value_of(args, name) {
                        Some(v) => text.push_str(&word_text(v)),
                        None => complete = false,
                    },
                }
            }
            if complete {
                out.push(text);
            }
        }
        out
    }

    /// The argument's value, else its schema default; `None` when neither
    /// (or when it is `null`).
    fn value_of<'a>(&'a self, args: &'a Value, name: &str) -> Option<&'a Value> {
        args.get(name)
            .filter(|v| !v.is_null())
            .or_else(|| self.properties.get(name).and_then(|p| p.get("default")))
            .filter(|v| !v.is_null())
    }

    fn environment(&self) -> Environment {
        Environment::Only(
            self.env
                .iter()
                .filter_map(|name| std::env::var_os(name).map(|v| (OsString::from(name), v)))
                .collect(),
        )
    }

    async fn run(&self, ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
        let mut argv = self.argv_for(&args).into_iter().map(OsString::from);
        let program = argv
            .next()
            .ok_or_else(|| ToolError::new(format!("{}: no program to run", self.name)))?;
        let spec = ProcessSpec {
            program,
            args: argv.collect(),
            cwd: ctx.sandbox.workspace().root().to_path_buf(),
            env: self.environment(),
            timeout: ctx.limits.timeout,
            merge_stderr: self.output == ExecOutput::Text,
            confine: ctx.confine.clone(),
        };
        let label = process::format_seconds(ctx.limits.timeout.as_secs_f64());
        match self.output {
            ExecOutput::Text => {
                run_for_text(ctx, &spec, &label, &format!("toolgate-{}", self.name)).await
            }
            ExecOutput::Content => self.run_for_content(ctx, &spec, &label).await,
        }
    }

    async fn run_for_content(
        &self,
        ctx: &ToolContext,
        spec: &ProcessSpec,
        timeout_label: &str,
    ) -> Result<ToolOutput, ToolError> {
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::new("Command aborted"));
        }
        let mut capture = ContentCapture {
            stdout: Vec::new(),
            overflow: false,
            stderr: OutputAccumulator::new(&ctx.limits, &format!("toolgate-{}-stderr", self.name)),
            line: Vec::new(),
            progress: ctx.progress.clone(),
        };
        let ending = process::run(spec, &ctx.cancel, &mut capture).await?;
        capture.end_of_stderr();
        let stderr = capture.stderr.snapshot();
        capture.stderr.finish();
        if let Some(status) = ending_status(ending, timeout_label) {
            let mut text = stderr.render("");
            if text.is_empty() {
                // The program may report its failure on stdout.
                let stdout = String::from_utf8_lossy(&capture.stdout);
                text = truncate_tail(&stdout, stderr.max_lines, stderr.max_bytes).content;
            }
            if text.is_empty() && matches!(ending, Ending::Exited(_)) {
                text = "(no output)".to_string();
            }
            return Err(ToolError {
                message: append_status(&text, &status),
                details: stderr.details(),
            });
        }
        if capture.overflow {
            return Err(ToolError::new(format!(
                "{} printed more than {} of content; output = \"content\" allows at most that",
                self.name,
                format_size(MAX_CONTENT_BYTES)
            )));
        }
        let content: Vec<Content> = serde_json::from_slice(&capture.stdout).map_err(|e| {
            ToolError::new(format!(
                "{} printed invalid content JSON: {e}. With output = \"content\" the program must print a JSON array of MCP content blocks, e.g. [{{\"type\":\"text\",\"text\":\"…\"}}]",
                self.name
            ))
        })?;
        Ok(ToolOutput {
            content,
            details: json!({}),
        })
    }
}

impl Tool for ExecTool {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(self.run(ctx, args))
    }
}

/// An argument value as the text of one argv word.
fn word_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Longest stderr line looked at as an update record; longer lines are
/// plain stderr (a record is a few numbers and a message).
const MAX_RECORD_LINE: usize = 64 * 1024;

/// Content mode: stdout kept whole (bounded), stderr as a tail, update
/// records on stderr turned into progress.
struct ContentCapture {
    stdout: Vec<u8>,
    overflow: bool,
    stderr: OutputAccumulator,
    /// The stderr line being received.
    line: Vec<u8>,
    progress: Progress,
}

impl ContentCapture {
    fn stderr_data(&mut self, mut bytes: &[u8]) {
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&bytes[..=end]);
            bytes = &bytes[end + 1..];
            self.end_of_line();
        }
        self.line.extend_from_slice(bytes);
        if self.line.len() > MAX_RECORD_LINE {
            // Too long to be a record: plain stderr, kept as it comes.
            self.stderr.append(&self.line);
            self.line.clear();
        }
    }

    fn end_of_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        match update_record(&line) {
            Some(details) => self.progress.update(ToolOutput {
                content: Vec::new(),
                details,
            }),
            None => self.stderr.append(&line),
        }
    }

    /// The last line, when the program ended without a newline.
    fn end_of_stderr(&mut self) {
        if !self.line.is_empty() {
            self.end_of_line();
        }
    }
}

/// A stderr line that is an update record: a JSON object with a numeric
/// `progress` or an object `log` holding `data`.
fn update_record(line: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(line).ok()?.trim();
    if !text.starts_with('{') {
        return None;
    }
    let value: Value = serde_json::from_str(text).ok()?;
    let is_progress = value.get("progress").is_some_and(Value::is_number);
    let is_log = value
        .get("log")
        .and_then(Value::as_object)
        .is_some_and(|l| l.contains_key("data"));
    (is_progress || is_log).then_some(value)
}

impl OutputHandler for ContentCapture {
    fn data(&mut self, stream: Stream, bytes: &[u8]) {
        match stream {
            Stream::Err => self.stderr_data(bytes),
            Stream::Out if self.stdout.len() + bytes.len() > MAX_CONTENT_BYTES => {
                self.overflow = true;
            }
            Stream::Out => self.stdout.extend_from_slice(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(argv: &[&str], props: Value) -> ExecTool {
        ExecTool {
            name: "t".into(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            properties: props.as_object().cloned().unwrap_or_default(),
            env: vec!["PATH".into()],
            output: ExecOutput::Text,
        }
    }

    #[test]
    fn placeholders_expand_to_whole_words() {
        let t = tool(
            &[
                "git",
                "log",
                "-n",
                "{count}",
                "--",
                "{paths}",
                "--x={flag}",
                "{missing}",
                "{}",
            ],
            json!({}),
        );
        let argv = t.argv_for(&json!({
            "count": 5, "paths": ["a b", "c;d"], "flag": true
        }));
        assert_eq!(
            argv,
            vec!["git", "log", "-n", "5", "--", "a b", "c;d", "--x=true", "{}"]
        );
    }

    #[test]
    fn stderr_records_become_updates_and_other_lines_stay_stderr() {
        use std::sync::{Arc, Mutex};
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let limits = crate::tools::RunLimits::default();
        let mut capture = ContentCapture {
            stdout: Vec::new(),
            overflow: false,
            stderr: OutputAccumulator::new(&limits, "toolgate-test"),
            line: Vec::new(),
            progress: Progress::new(move |u| sink.lock().unwrap().push(u.details)),
        };
        capture.data(Stream::Err, b"{\"progress\": 0, \"tot");
        capture.data(
            Stream::Err,
            b"al\": 100}\nplain line\n{\"not\": \"a record\"}\n",
        );
        capture.data(
            Stream::Err,
            b"{\"log\": {\"level\": \"info\", \"data\": \"hi\"}}",
        );
        capture.end_of_stderr();
        let seen = seen.lock().unwrap();
        assert_eq!(
            *seen,
            vec![
                json!({"progress": 0, "total": 100}),
                json!({"log": {"level": "info", "data": "hi"}})
            ]
        );
        let text = capture.stderr.snapshot().render("");
        assert!(text.contains("plain line"), "{text}");
        assert!(text.contains("a record"), "{text}");
        assert!(!text.contains("progress"), "{text}");
    }

    #[test]
    fn absent_arguments_drop_their_word_or_use_the_default() {
        let t = tool(
            &["prog", "--limit={limit}", "{name}"],
            json!({"limit": {"type": "integer", "default": 20}}),
        );
        assert_eq!(t.argv_for(&json!({})), vec!["prog", "--limit=20"]);
        assert_eq!(
            t.argv_for(&json!({"limit": null, "name": "x"})),
            vec!["prog", "--limit=20", "x"]
        );
    }
}

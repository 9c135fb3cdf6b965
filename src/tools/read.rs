//! The built-in `read` tool: a text file's lines (from `offset`, at most
//! `limit`, head-truncated to Pi's limits with Pi's notices), or an image.
//!
//! Reads are the most frequent tool call, so small files are read right on
//! the calling task: opening and reading a file of a few KB from the page
//! cache takes microseconds, less than handing it to a blocking thread and
//! back — and a batch of a thousand reads would otherwise start hundreds of
//! blocking threads. The open is non-blocking, so a FIFO swapped in for the
//! file cannot stall the task; large files and special files are read on a
//! blocking thread, in chunks, checking for cancellation between them.

use std::io::{self, Read};
use std::path::Path;

use base64::Engine;
use cap_std::fs::{File, Metadata, OpenOptions, OpenOptionsExt};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::binary::{append_notice, mask_nul, BinaryCount, BinaryScan};
use super::file_errors::{io_error, join_error, ABORTED};
use super::image::{detect_mime_type, is_inline_type, SNIFF_BYTES};
use super::read_lines::{LineSelector, LossyDecoder, Selection};
use super::{Content, Sandbox, Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use crate::text::{format_size, TruncatedBy, Truncation, DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES};

/// Regular files up to this size are read on the calling task (see the
/// module docs): about 50 µs from the page cache.
const INLINE_READ_MAX: u64 = 256 * 1024;
/// Read size for files read in chunks.
const CHUNK_SIZE: usize = 64 * 1024;
/// Pi's inline image limit: 4.5 MB of base64. Pi shrinks larger images;
/// toolgate has no image codec, so it leaves them out with Pi's notice.
const MAX_IMAGE_BASE64_BYTES: usize = 4_718_592;
/// Pi's text when an image cannot be brought under the limit.
const IMAGE_TOO_LARGE: &str =
    "[Image omitted: could not be resized below the inline image size limit.]";
/// Pi's text when an image is in a format models cannot take.
const IMAGE_NOT_CONVERTIBLE: &str =
    "[Image omitted: could not be converted to a supported inline image format.]";

/// The `read` tool.
#[derive(Debug, Default)]
pub struct ReadTool;

impl Tool for ReadTool {
    fn execute<'a>(&'a self, ctx: &'a ToolContext, args: Value) -> ToolFuture<'a> {
        Box::pin(read(ctx, args))
    }
}

/// The call's arguments. `offset` and `limit` are JSON numbers (the schema
/// says `number`, as Pi's does); fractions are cut toward zero.
#[derive(Debug)]
struct Request {
    path: String,
    offset: Option<f64>,
    limit: Option<f64>,
}

impl Request {
    fn from_args(args: &Value) -> Result<Request, ToolError> {
        let path = args
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::new("read: path must be a string"))?;
        Ok(Request {
            path: path.to_string(),
            offset: args.get("offset").and_then(Value::as_f64),
            limit: args.get("limit").and_then(Value::as_f64),
        })
    }

    /// The first line to show, 0-based. Pi: `offset ? max(0, offset - 1) : 0`.
    fn start_line(&self) -> usize {
        match self.offset {
            // `as` saturates and maps NaN to 0.
            Some(offset) if offset >= 1.0 => (offset - 1.0) as usize,
            _ => 0,
        }
    }

    /// How many lines to show at most; a negative limit shows none.
    fn limit_lines(&self) -> Option<usize> {
        self.limit.map(|l| l.max(0.0) as usize)
    }
}

/// What was found in the file.
#[derive(Debug)]
enum Loaded {
    /// The selected lines, and what in the whole file was not text.
    Text(Selection, BinaryCount),
    Image {
        mime: &'static str,
        base64: String,
    },
    /// An image that is not sent, with the reason as Pi words it.
    ImageOmitted {
        mime: &'static str,
        note: &'static str,
    },
}

async fn read(ctx: &ToolContext, args: Value) -> Result<ToolOutput, ToolError> {
    let request = Request::from_args(&args)?;
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    let abs = ctx.sandbox.absolute(&request.path);
    let file = open(&ctx.sandbox, &abs, false)?;
    let meta = file.metadata().map_err(|e| io_error(&e, "fstat", &abs))?;
    if meta.is_dir() {
        return Err(ToolError::new(
            "EISDIR: illegal operation on a directory, read",
        ));
    }
    let (start, limit) = (request.start_line(), request.limit_lines());
    let loaded = if meta.is_file() && meta.len() <= INLINE_READ_MAX {
        load(file, &meta, start, limit, &ctx.cancel, &abs)?
    } else {
        let sandbox = ctx.sandbox.clone();
        let cancel = ctx.cancel.clone();
        let abs = abs.clone();
        tokio::task::spawn_blocking(move || {
            // A special file was opened non-blocking; read it blocking.
            let file = if meta.is_file() {
                file
            } else {
                open(&sandbox, &abs, true)?
            };
            load(file, &meta, start, limit, &cancel, &abs)
        })
        .await
        .map_err(join_error)??
    };
    if ctx.cancel.is_cancelled() {
        return Err(ToolError::new(ABORTED));
    }
    render(&request, loaded)
}

/// Opens `abs` for reading beneath its sandbox root.
fn open(sandbox: &Sandbox, abs: &Path, blocking: bool) -> Result<File, ToolError> {
    // Pi checks access first, so its errors name the `access` call.
    let (dir, rel) = sandbox
        .locate(abs)
        .map_err(|e| io_error(&e, "access", abs))?;
    let flags = if blocking {
        libc::O_NOCTTY
    } else {
        libc::O_NOCTTY | libc::O_NONBLOCK
    };
    dir.open_with(&rel, OpenOptions::new().read(true).custom_flags(flags))
        .map_err(|e| io_error(&e, "access", abs))
}

/// Reads the file: sniffs for an image, else selects lines chunk by chunk.
fn load(
    file: File,
    meta: &Metadata,
    start: usize,
    limit: Option<usize>,
    cancel: &CancellationToken,
    abs: &Path,
) -> Result<Loaded, ToolError> {
    let read_error = |e: io::Error| io_error(&e, "read", abs);
    // A regular file is read up to its size when opened, as Pi does, so a
    // file that grows while being read still ends; others until EOF (a /proc
    // file reports size 0).
    let size = Some(meta.len()).filter(|&s| meta.is_file() && s > 0);
    let chunk_len = size.map_or(CHUNK_SIZE, |s| s.min(CHUNK_SIZE as u64) as usize);
    let mut reader = file.take(size.unwrap_or(u64::MAX));
    let mut chunk = Vec::with_capacity(chunk_len);
    let mut eof = fill(&mut reader, &mut chunk, chunk_len.max(SNIFF_BYTES)).map_err(read_error)?;

    if let Some(mime) = detect_mime_type(&chunk[..chunk.len().min(SNIFF_BYTES)]) {
        return load_image(reader, chunk, mime, size).map_err(read_error);
    }
    let mut decoder = LossyDecoder::default();
    let mut binary = BinaryScan::default();
    let mut selector = LineSelector::new(start, limit);
    let mut sink = |text: &str| selector.push(&mask_nul(text));
    binary.feed(&chunk);
    decoder.feed(&chunk, &mut sink);
    while !eof {
        if cancel.is_cancelled() {
            return Err(ToolError::new(ABORTED));
        }
        chunk.clear();
        eof = fill(&mut reader, &mut chunk, CHUNK_SIZE).map_err(read_error)?;
        binary.feed(&chunk);
        decoder.feed(&chunk, &mut sink);
    }
    decoder.finish(&mut sink);
    Ok(Loaded::Text(selector.finish(), binary.count()))
}

/// Reads until `buf` holds `want` bytes or the input ends; true at the end.
fn fill(reader: &mut impl Read, buf: &mut Vec<u8>, want: usize) -> io::Result<bool> {
    let missing = want.saturating_sub(buf.len()) as u64;
    reader.by_ref().take(missing).read_to_end(buf)?;
    Ok(buf.len() < want)
}

fn load_image(
    reader: impl Read,
    mut bytes: Vec<u8>,
    mime: &'static str,
    size: Option<u64>,
) -> io::Result<Loaded> {
    if !is_inline_type(mime) {
        return Ok(Loaded::ImageOmitted {
            mime,
            note: IMAGE_NOT_CONVERTIBLE,
        });
    }
    let too_large = |len: u64| len.div_ceil(3) * 4 >= MAX_IMAGE_BASE64_BYTES as u64;
    if size.is_some_and(too_large) {
        return Ok(Loaded::ImageOmitted {
            mime,
            note: IMAGE_TOO_LARGE,
        });
    }
    // Bounded, in case the size was not known (or the file grows).
    let cap = (MAX_IMAGE_BASE64_BYTES / 4 * 3) as u64;
    reader.take(cap).read_to_end(&mut bytes)?;
    if too_large(bytes.len() as u64) {
        return Ok(Loaded::ImageOmitted {
            mime,
            note: IMAGE_TOO_LARGE,
        });
    }
    Ok(Loaded::Image {
        mime,
        base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}

/// The model's view of what was loaded, with Pi's notices, and toolgate's
/// when the file is not all text.
fn render(request: &Request, loaded: Loaded) -> Result<ToolOutput, ToolError> {
    let (selection, binary) = match loaded {
        Loaded::Image { mime, base64 } => {
            return Ok(ToolOutput {
                content: vec![
                    Content::text(format!("Read image file [{mime}]")),
                    Content::Image {
                        data: base64,
                        mime_type: mime.to_string(),
                    },
                ],
                details: json!({}),
            })
        }
        Loaded::ImageOmitted { mime, note } => {
            return Ok(ToolOutput::text(format!(
                "Read image file [{mime}]\n{note}"
            )))
        }
        Loaded::Text(selection, binary) => (selection, binary),
    };
    let mut output = render_text(request, &selection)?;
    if let Some(notice) = binary.notice("file") {
        append_notice(&mut output, &notice);
    }
    Ok(output)
}

/// The selected lines with Pi's notices.
fn render_text(request: &Request, selection: &Selection) -> Result<ToolOutput, ToolError> {
    let total = selection.total_file_lines;
    let start = request.start_line();
    if start >= total {
        return Err(ToolError::new(format!(
            "Offset {} is beyond end of file ({total} lines total)",
            js_number(request.offset.unwrap_or(0.0))
        )));
    }
    let first = start + 1;
    let truncation = &selection.truncation;
    let max = format_size(DEFAULT_MAX_BYTES);
    if truncation.first_line_exceeds_limit {
        let text = format!(
            "[Line {first} is {}, exceeds {max} limit. Use bash: sed -n '{first}p' {} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(selection.first_line_bytes),
            request.path,
        );
        return Ok(ToolOutput::with_details(
            text,
            truncation_details(truncation),
        ));
    }
    if let Some(by) = truncation.truncated_by {
        let last = first + truncation.output_lines - 1;
        let limit_note = match by {
            TruncatedBy::Lines => String::new(),
            TruncatedBy::Bytes => format!(" ({max} limit)"),
        };
        let text = format!(
            "{}\n\n[Showing lines {first}-{last} of {total}{limit_note}. Use offset={} to continue.]",
            truncation.content,
            last + 1,
        );
        return Ok(ToolOutput::with_details(
            text,
            truncation_details(truncation),
        ));
    }
    // A limit that stopped before the end of the file says how to go on.
    let shown = request
        .limit_lines()
        .map(|limit| start.saturating_add(limit).min(total) - start);
    match shown {
        Some(shown) if start + shown < total => Ok(ToolOutput::text(format!(
            "{}\n\n[{} more lines in file. Use offset={} to continue.]",
            truncation.content,
            total - (start + shown),
            start + shown + 1,
        ))),
        _ => Ok(ToolOutput::text(truncation.content.clone())),
    }
}

/// Pi's `details.truncation`, without the text (it is the content already).
fn truncation_details(t: &Truncation) -> Value {
    let by = t.truncated_by.map(|by| match by {
        TruncatedBy::Lines => "lines",
        TruncatedBy::Bytes => "bytes",
    });
    json!({
        "truncation": {
            "truncated": t.truncated(),
            "truncatedBy": by,
            "totalLines": t.total_lines,
            "totalBytes": t.total_bytes,
            "outputLines": t.output_lines,
            "outputBytes": t.output_bytes,
            "lastLinePartial": t.last_line_partial,
            "firstLineExceedsLimit": t.first_line_exceeds_limit,
            "maxLines": DEFAULT_MAX_LINES,
            "maxBytes": DEFAULT_MAX_BYTES,
        }
    })
}

/// A number as JavaScript prints it in a template string (`100`, `1.5`).
fn js_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

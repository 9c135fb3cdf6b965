// Records what Pi 1.6's own read and edit tools answer for the cases below,
// into read_cases.json and edit_cases.json next to this script. The Rust
// tests (tests/tools_files_*.rs) replay the cases against toolgate's tools.
//
// Usage (Node >= 20; Pi's tool modules are imported directly, not its CLI):
//   npm install --ignore-scripts @earendil-works/pi-coding-agent@1.6.0
//   PI_TOOLS=node_modules/@earendil-works/pi-coding-agent/dist/core/tools \
//     node tests/data/tools_files/record_pi.mjs
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const tools = path.resolve(process.env.PI_TOOLS ?? "node_modules/@earendil-works/pi-coding-agent/dist/core/tools");
const { createReadTool } = await import(pathToFileURL(path.join(tools, "read.js")));
const { createEditTool } = await import(pathToFileURL(path.join(tools, "edit.js")));
const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * File contents too large to write out in the cases are generated from a spec:
 * a string is itself, an array the concatenation of its parts,
 * `{repeat, times}` a repetition, `{count, line, trailing_newline, extra}`
 * numbered lines (`{i}` is the 1-based line number).
 */
function generate(spec) {
  if (typeof spec === "string") return spec;
  if (Array.isArray(spec)) return spec.map(generate).join("");
  if (spec.repeat !== undefined) return spec.repeat.repeat(spec.times);
  const lines = Array.from({ length: spec.count }, (_, i) => spec.line.replaceAll("{i}", String(i + 1)));
  return lines.join("\n") + (spec.trailing_newline ? "\n" : "") + (spec.extra ?? "");
}

const repeat = (s, n) => s.repeat(n);
const readCases = [
  { name: "2500 lines", content: { count: 2500, line: "line {i}" }, args: {} },
  { name: "2500 lines with a final newline", content: { count: 2500, line: "line {i}", trailing_newline: true }, args: {} },
  { name: "exactly 2000 lines", content: { count: 2000, line: "line {i}" }, args: {} },
  { name: "2001 lines", content: { count: 2001, line: "line {i}" }, args: {} },
  { name: "byte limit", content: { count: 500, line: repeat("x", 209) }, args: {} },
  { name: "byte limit from an offset", content: { count: 500, line: repeat("x", 209) }, args: { offset: 100 } },
  { name: "exactly 51200 bytes", content: { count: 512, line: repeat("z", 99), trailing_newline: true }, args: {} },
  { name: "51201 bytes", content: { count: 512, line: repeat("z", 99) + "", trailing_newline: true, extra: "!" }, args: {} },
  { name: "multi-byte lines at the byte limit", content: { count: 400, line: repeat("é", 70) + " {i}" }, args: {} },
  { name: "100 lines, limit 10", content: { count: 100, line: "line {i}" }, args: { limit: 10 } },
  { name: "100 lines with a final newline, limit 10", content: { count: 100, line: "line {i}", trailing_newline: true }, args: { limit: 10 } },
  { name: "offset and limit in the middle", content: { count: 100, line: "line {i}" }, args: { offset: 40, limit: 5 } },
  { name: "limit past the end", content: { count: 100, line: "line {i}" }, args: { offset: 95, limit: 10 } },
  { name: "limit 0", content: { count: 10, line: "line {i}" }, args: { limit: 0 } },
  { name: "offset 0 reads from the start", content: "a\nb\n", args: { offset: 0 } },
  { name: "offset beyond a 3-line file", content: "a\nb\nc", args: { offset: 100 } },
  { name: "offset beyond a file with a final newline", content: "a\nb\nc\n", args: { offset: 100 } },
  { name: "offset on the empty last line", content: "a\nb\nc\n", args: { offset: 4 } },
  { name: "offset one past the last line", content: "a\nb\nc\n", args: { offset: 5 } },
  { name: "first line too long", content: [{ repeat: "y", times: 60000 }, "\nshort\n"], args: {} },
  { name: "long line at the offset", content: ["short\n", { repeat: "y", times: 60000 }, "\nend"], args: { offset: 2 } },
  { name: "long line after short ones", content: ["one\ntwo\n", { repeat: "y", times: 60000 }, "\nend"], args: {} },
  { name: "empty file", content: "", args: {} },
  { name: "empty file, offset 2", content: "", args: { offset: 2 } },
  { name: "byte order mark is kept", content: "\uFEFFhello\nworld\n", args: {} },
  { name: "CRLF is kept", content: "one\r\ntwo\r\n", args: {} },
  { name: "only newlines", content: "\n\n\n", args: { offset: 2 } },
];

const editCases = [
  { name: "pi vector", content: "foo\nbar\nbaz\n", edits: [{ oldText: "foo\n", newText: "foo bar\n" }, { oldText: "bar\n", newText: "BAR\n" }] },
  { name: "not found, one edit", content: "foo\n", edits: [{ oldText: "x", newText: "y" }] },
  { name: "not found, several edits", content: "foo\n", edits: [{ oldText: "foo", newText: "y" }, { oldText: "x", newText: "y" }] },
  { name: "duplicate, one edit", content: "a\na\na\n", edits: [{ oldText: "a", newText: "b" }] },
  { name: "duplicate, several edits", content: "a\na\na\nz", edits: [{ oldText: "z", newText: "b" }, { oldText: "a", newText: "b" }] },
  { name: "overlap", content: "abcdef", edits: [{ oldText: "abc", newText: "x" }, { oldText: "cde", newText: "y" }] },
  { name: "overlap named in file order", content: "abcdef", edits: [{ oldText: "cde", newText: "y" }, { oldText: "abc", newText: "x" }] },
  { name: "nested edits overlap", content: "abcdef", edits: [{ oldText: "abcdef", newText: "x" }, { oldText: "cd", newText: "y" }] },
  { name: "adjacent edits do not overlap", content: "abcdef", edits: [{ oldText: "abc", newText: "X" }, { oldText: "def", newText: "Y" }] },
  { name: "no edits", content: "abc", edits: [] },
  { name: "empty oldText, one edit", content: "abc", edits: [{ oldText: "", newText: "x" }] },
  { name: "empty oldText, several edits", content: "abc", edits: [{ oldText: "a", newText: "x" }, { oldText: "", newText: "x" }] },
  { name: "no change, one edit", content: "abc", edits: [{ oldText: "b", newText: "b" }] },
  { name: "no change, several edits", content: "abc", edits: [{ oldText: "b", newText: "b" }, { oldText: "c", newText: "c" }] },
  { name: "CRLF kept", content: "one\r\ntwo\r\nthree\r\n", edits: [{ oldText: "two\n", newText: "TWO\nextra\n" }] },
  { name: "CRLF in oldText and newText", content: "one\r\ntwo\r\nthree\r\n", edits: [{ oldText: "one\r\ntwo", newText: "1\r\n2" }] },
  { name: "CRLF oldText in an LF file", content: "one\ntwo\n", edits: [{ oldText: "one\r\ntwo", newText: "1\n2" }] },
  { name: "mixed line endings follow the replaced line", content: "one\ntwo\r\nthree\n", edits: [{ oldText: "two\nthree", newText: "2\n3" }] },
  { name: "classic Mac line endings", content: "a\rb\rc", edits: [{ oldText: "b\nc", newText: "B\nC\nD" }] },
  { name: "stray CR in an LF file", content: "x\ry\nz\n", edits: [{ oldText: "y\n", newText: "\nY\n" }] },
  { name: "BOM kept", content: "\uFEFFhello\nworld\n", edits: [{ oldText: "hello", newText: "HI" }] },
  { name: "BOM and CRLF kept", content: "\uFEFFa\r\nb\r\n", edits: [{ oldText: "b", newText: "B\nC" }] },
  { name: "fuzzy: smart quotes and trailing spaces", content: "say \u201chi\u201d  \nnext line\n", edits: [{ oldText: "say \"hi\"\nnext", newText: "say 'yo'\nnext" }] },
  { name: "fuzzy: em dash, other lines untouched", content: "a \u2014 b\nkeep   \nc\n", edits: [{ oldText: "a - b", newText: "A" }] },
  { name: "fuzzy: NBSP and ligature", content: "x\u00a0=\u00a01 \ufb01nal\nend\n", edits: [{ oldText: "x = 1 final", newText: "x = 2" }] },
  { name: "fuzzy and exact edits together", content: "it\u2019s  \nplain\nlast \u201cq\u201d\n", edits: [{ oldText: "plain", newText: "PLAIN" }, { oldText: "it's", newText: "it is" }] },
  { name: "two fuzzy edits on one line", content: "\u201ca\u201d and \u201cb\u201d   \nz\n", edits: [{ oldText: "\"a\"", newText: "A" }, { oldText: "\"b\"", newText: "B" }] },
  { name: "fuzzy duplicate", content: "x  \nx\n", edits: [{ oldText: "x\n", newText: "y\n" }] },
  { name: "fuzzy not found", content: "alpha\n", edits: [{ oldText: "\u201cbeta\u201d", newText: "x" }] },
  { name: "distant edits get separate hunks", content: { count: 100, line: "line {i}", trailing_newline: true }, edits: [{ oldText: "line 50\n", newText: "fifty\n" }, { oldText: "line 3\n", newText: "three\n" }] },
  { name: "nearby edits share a window", content: { count: 100, line: "line {i}", trailing_newline: true }, edits: [{ oldText: "line 40\n", newText: "forty\n" }, { oldText: "line 60\n", newText: "sixty\n" }] },
  { name: "edits at the very start and end", content: { count: 30, line: "row {i}" }, edits: [{ oldText: "row 1\n", newText: "" }, { oldText: "row 30", newText: "row 30\nrow 31" }] },
  { name: "no final newline", content: "a\nb", edits: [{ oldText: "b", newText: "c" }] },
  { name: "adding a final newline", content: "a\nb", edits: [{ oldText: "b", newText: "b\n" }] },
  { name: "deleting lines", content: "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", edits: [{ oldText: "5\n6\n7\n", newText: "" }] },
  { name: "many inserted lines", content: "head\ntail\n", edits: [{ oldText: "head\n", newText: Array.from({ length: 20 }, (_, i) => `new ${i}`).join("\n") + "\n" }] },
  { name: "replacement patterns are literal", content: "price\n", edits: [{ oldText: "price", newText: "$& $1 $$ $`" }] },
  { name: "multi-byte text", content: "\u65e5\u672c\u8a9e\n\ud83d\ude00 smile\n\u00e9t\u00e9\n", edits: [{ oldText: "\ud83d\ude00 smile", newText: "\ud83d\ude03 grin" }, { oldText: "\u00e9t\u00e9", newText: "summer" }] },
  { name: "whole file replaced", content: "old\n", edits: [{ oldText: "old\n", newText: "new\n" }] },
  { name: "file emptied", content: "gone", edits: [{ oldText: "gone", newText: "" }] },
];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pi-record-"));
const read = createReadTool(dir);
const edit = createEditTool(dir);

const readOut = [];
for (const [i, c] of readCases.entries()) {
  const file = `r${i}.txt`;
  fs.writeFileSync(path.join(dir, file), generate(c.content));
  const record = { name: c.name, path: file, content: c.content, args: c.args };
  try {
    const r = await read.execute("1", { path: file, ...c.args });
    record.text = r.content[0].text;
    if (r.details?.truncation) {
      const { content: _content, ...truncation } = r.details.truncation;
      record.truncation = truncation;
    }
  } catch (e) {
    record.error = e.message;
  }
  readOut.push(record);
}

const editOut = [];
for (const [i, c] of editCases.entries()) {
  const file = `e${i}.txt`;
  fs.writeFileSync(path.join(dir, file), generate(c.content));
  const record = { name: c.name, path: file, content: c.content, edits: c.edits };
  try {
    const r = await edit.execute("1", { path: file, edits: c.edits });
    record.text = r.content[0].text;
    record.details = r.details;
  } catch (e) {
    record.error = e.message;
  }
  record.after = fs.readFileSync(path.join(dir, file), "utf-8");
  editOut.push(record);
}
fs.rmSync(dir, { recursive: true, force: true });

// Long expected texts are kept short: the start, the end and the length.
for (const r of readOut) {
  if (r.text && r.text.length > 400) {
    r.text_starts_with = r.text.slice(0, 100);
    r.text_ends_with = r.text.slice(-200);
    r.text_bytes = Buffer.byteLength(r.text, "utf-8");
    delete r.text;
  }
}
fs.writeFileSync(path.join(here, "read_cases.json"), JSON.stringify(readOut, null, 1) + "\n");
fs.writeFileSync(path.join(here, "edit_cases.json"), JSON.stringify(editOut, null, 1) + "\n");
console.log(`recorded ${readOut.length} read and ${editOut.length} edit cases`);

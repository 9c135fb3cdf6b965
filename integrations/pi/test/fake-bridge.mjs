// For extension.test.mjs: a stand-in for `toolgate bridge --stdio` that
// logs every request line it gets (to $FAKE_BRIDGE_LOG, one
// `type call_id` line each) and answers: `tools` with no known tools (Pi's
// own settings stay), `before` with allow — or not at all when
// $FAKE_BRIDGE_SILENT is set (a bridge that hangs) — and `after` with the
// result unchanged. Started through fake-bridge.sh.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const log = process.env.FAKE_BRIDGE_LOG;
const silent = Boolean(process.env.FAKE_BRIDGE_SILENT);
for await (const line of createInterface({ input: process.stdin })) {
	const req = JSON.parse(line);
	if (log) appendFileSync(log, `${req.type} ${req.call_id ?? ""}\n`);
	let answer;
	if (req.type === "tools") answer = { tools: [], known: [] };
	else if (req.type === "before" && !silent) answer = { decision: "allow", reason: "fake", rule: null, terminate: false };
	else if (req.type === "after") answer = { content: req.content, details: req.details, is_error: req.is_error, terminate: false, redacted: 0 };
	if (answer) process.stdout.write(`${JSON.stringify({ id: req.id, ...answer })}\n`);
}

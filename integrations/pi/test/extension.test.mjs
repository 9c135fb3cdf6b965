// The toolgate extension in a real Pi 1.6 session (SDK, faux provider,
// offline), with the real `toolgate bridge` from TOOLGATE_BIN. Run by
// tests/pi_extension.rs (so by `cargo test` and `.ci/run`):
//   TOOLGATE_BIN=target/debug/toolgate node --test integrations/pi/test/

import assert from "node:assert/strict";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, test } from "node:test";

import { childPids, eventually, openSession, workspace } from "./harness.mjs";

const SECRET = "ghp_0123456789abcdefghij0123456789abcdef";
// The shipped default policy (builtin), from the project's own folder.
const DEFAULT_POLICY = 'version: 1\nextends: ["builtin:default"]\n';
// Active lists of layered policies add up, so this one stands alone: no bash, notes.txt denied.
const EDITED_POLICY = 'version: 1\ntools:\n  active: [read, grep, find, ls, edit, write]\npaths:\n  deny: ["notes.txt"]\n';

const open = [];
async function start(files = {}) {
	const dir = workspace({
		"notes.txt": "hello\n",
		".env": `TOKEN=${SECRET}\n`,
		"policies/policy.yaml": DEFAULT_POLICY,
		...files,
	});
	const pi = await openSession(dir);
	open.push(pi);
	return { dir, pi };
}
after(async () => {
	for (const pi of open) await pi.close();
});

test("an allowed read runs and its output reaches the model", async () => {
	const { pi } = await start();
	const [r] = await pi.turn([["read", { path: "notes.txt" }]]);
	assert.equal(r.isError, false, r.text);
	assert.equal(r.text, "hello\n");
});

test("read .env is blocked and the model reads toolgate's reason", async () => {
	const { pi } = await start();
	const [r] = await pi.turn([["read", { path: ".env" }]]);
	assert.equal(r.isError, true);
	assert.match(r.text, /`\.env` is denied by the policy \(matches `\*\*\/\.env`\)/);
	assert.ok(!r.text.includes(SECRET));
});

test("bash rm -rf / is blocked by the destructive-command rule", async () => {
	const { pi } = await start();
	const [r] = await pi.turn([["bash", { command: "rm -rf /" }]]);
	assert.equal(r.isError, true);
	assert.match(r.text, /no-recursive-delete/);
});

test("a file holding a secret is read with the secret redacted, and so is an error's text", async () => {
	const { pi } = await start({ "config.txt": `url=https://x\ntoken=${SECRET}\n` });
	const [ok, failed] = await pi.turn([
		["read", { path: "config.txt" }],
		// cat exits 1 (the second file is missing): Pi's bash throws, and its
		// error text carries the secret. Pi runs tool_result for it too.
		["bash", { command: "cat config.txt missing.txt" }],
	]);
	assert.equal(ok.isError, false, ok.text);
	assert.equal(ok.text, "url=https://x\ntoken=[REDACTED:github-pat]\n");
	assert.equal(failed.isError, true, failed.text);
	assert.match(failed.text, /token=\[REDACTED:github-pat\]/);
	assert.match(failed.text, /missing\.txt/);
	const transcript = JSON.stringify(pi.session.messages);
	assert.ok(!transcript.includes(SECRET), "the secret reached the transcript");
});

test("a parallel batch with two edits of one file: both land", async () => {
	const { dir, pi } = await start({ "code.txt": "alpha\nbeta\ngamma\n" });
	const results = await pi.turn([
		["edit", { path: "code.txt", edits: [{ oldText: "alpha", newText: "ALPHA" }] }],
		["edit", { path: "code.txt", edits: [{ oldText: "gamma", newText: "GAMMA" }] }],
	]);
	for (const r of results) assert.equal(r.isError, false, r.text);
	assert.equal(readFileSync(join(dir, "code.txt"), "utf8"), "ALPHA\nbeta\nGAMMA\n");
});

test("an ask in a headless session is blocked: approval required", async () => {
	const { pi } = await start();
	const [r] = await pi.turn([["bash", { command: "git push origin main" }]]);
	assert.equal(r.isError, true);
	assert.match(r.text, /^Approval required: .*git push/);
	assert.match(r.text, /no UI/);
});

test("the bridge killed mid-session: the next call is blocked, not allowed", async () => {
	const { pi } = await start();
	const [first] = await pi.turn([["read", { path: "notes.txt" }]]);
	assert.equal(first.isError, false, first.text);
	const before = childPids("toolgate");
	assert.ok(before.length >= 1, "no toolgate bridge is running");
	// Only the newest bridge is this session's (earlier tests' are still open).
	const pid = Math.max(...before);
	process.kill(pid, "SIGKILL");
	await eventually("the bridge to exit", () => !childPids("toolgate").includes(pid));
	const [r] = await pi.turn([["read", { path: "notes.txt" }]]);
	assert.equal(r.isError, true, "a call ran with the bridge dead");
	assert.match(r.text, /toolgate: the toolgate bridge was killed by SIGKILL; the call is blocked\./);
});

test("a policy edit during the session changes the next decision and the active tools", async () => {
	const { dir, pi } = await start();
	const active = () => pi.session.getActiveToolNames();
	assert.ok(active().includes("bash"), `bash is active under the default policy: ${active()}`);
	assert.ok(active().includes("grep"), `the policy's active set is applied at start: ${active()}`);
	const [first] = await pi.turn([["read", { path: "notes.txt" }]]);
	assert.equal(first.isError, false, first.text);

	// An editor-style save over the policy file.
	const tmp = join(dir, "policies", ".policy.yaml.swp");
	writeFileSync(tmp, EDITED_POLICY);
	renameSync(tmp, join(dir, "policies", "policy.yaml"));
	await eventually("bash to leave the active tools", () => !active().includes("bash"));
	assert.ok(active().includes("read"));

	const [r] = await pi.turn([["read", { path: "notes.txt" }]]);
	assert.equal(r.isError, true, "the edited policy denies notes.txt");
	assert.match(r.text, /notes\.txt/);
	assert.match(r.text, /denied by the policy/);
});

test("a missing toolgate binary blocks every call and says why", async () => {
	const saved = process.env.TOOLGATE_BIN;
	process.env.TOOLGATE_BIN = "/nonexistent/toolgate";
	let pi;
	try {
		pi = await openSession(workspace({ "notes.txt": "hello\n" }));
	} finally {
		process.env.TOOLGATE_BIN = saved;
	}
	open.push(pi);
	const [r] = await pi.turn([["read", { path: "notes.txt" }]]);
	assert.equal(r.isError, true, "a call ran without its policy");
	assert.match(r.text, /`\/nonexistent\/toolgate` was not found; install toolgate or set TOOLGATE_BIN/);
});

test("a policy that does not compile at start blocks every call and shows the error", async () => {
	const { pi } = await start({ "policies/policy.yaml": "version: 1\ntools: [\n" });
	const [r] = await pi.turn([["read", { path: "notes.txt" }]]);
	assert.equal(r.isError, true, "a call ran without its policy");
	assert.match(r.text, /the toolgate bridge exited with code 2: .*policy\.yaml:3:1: error: invalid YAML/s);
});

test("a nested call (a tool calling read) is decided and redacted like the model's own", async () => {
	const dir = workspace({
		"notes.txt": `token=${SECRET}\n`,
		".env": `TOKEN=${SECRET}\n`,
		// Standalone (layers cannot weaken `tools.unknown`): the test's own tool is allowed.
		"policies/policy.yaml": 'version: 1\ntools:\n  active: [read]\n  unknown: allow\npaths:\n  deny: ["**/.env"]\nredact:\n  defaults: true\n',
	});
	const pi = await openSession(dir, { extra: [new URL("./nested-extension.ts", import.meta.url).pathname] });
	open.push(pi);
	const [denied, redacted] = await pi.turn([
		["read_via", { path: ".env" }],
		["read_via", { path: "notes.txt" }],
	]);
	assert.match(denied.text, /^nested error \(clean\): .*`\.env` is denied by the policy/s);
	assert.equal(redacted.text, "nested ok (clean): token=[REDACTED:github-pat]\n");
	assert.ok(!JSON.stringify(pi.session.messages).includes(SECRET), "the secret reached the transcript");
});

/** A session on fake-bridge.sh (with `env` set while the session starts), and its request log. */
async function startFake(env = {}) {
	const dir = workspace({ "notes.txt": "hello\n" });
	const log = join(dir, "bridge.log");
	const vars = { TOOLGATE_BIN: new URL("./fake-bridge.sh", import.meta.url).pathname, FAKE_BRIDGE_NODE: process.execPath, FAKE_BRIDGE_LOG: log, ...env };
	const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
	Object.assign(process.env, vars);
	let pi;
	try {
		pi = await openSession(dir);
	} finally {
		for (const [k, v] of Object.entries(saved)) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
	}
	open.push(pi);
	return { dir, pi, requests: () => readFileSync(log, "utf8").trim().split("\n") };
}

test("a bridge that does not answer within the deadline: the call is blocked", async () => {
	const { dir, pi } = await startFake({ FAKE_BRIDGE_SILENT: "1", TOOLGATE_BRIDGE_TIMEOUT_MS: "300" });
	const [r] = await pi.turn([["write", { path: "out.txt", content: "x" }]]);
	assert.equal(r.isError, true, "a call ran without an answer");
	assert.equal(r.text, "toolgate: the toolgate bridge did not answer within 300 ms; the call is blocked.");
	assert.throws(() => readFileSync(join(dir, "out.txt")), "the blocked write ran");
});

test("a message's calls are decided ahead in one go, and decided again once a tool has run", async () => {
	const { pi, requests } = await startFake();
	// Pi's parallel mode: every call is decided before any runs, so the
	// decisions asked when the message ended are the ones used.
	const calls = [0, 1, 2].map(() => ["read", { path: "notes.txt" }]);
	await pi.turn(calls);
	const parallel = requests().slice(1);
	const first = parallel[0].split(" ")[1].replace(/_0$/, "");
	assert.deepEqual(parallel.slice(0, 3), [`before ${first}_0`, `before ${first}_1`, `before ${first}_2`]);
	assert.equal(parallel.filter((l) => l.startsWith("before")).length, 3, parallel.join("; "));
	// Sequential mode: each call runs before the next is decided, so a
	// decision asked before the first ran must be asked again.
	pi.session.agent.toolExecution = "sequential";
	const from = requests().length;
	await pi.turn([["write", { path: "a.txt", content: "a" }], ["read", { path: "a.txt" }]]);
	const sequential = requests().slice(from);
	const id = sequential[0].split(" ")[1].replace(/_0$/, "");
	assert.deepEqual(sequential, [`before ${id}_0`, `before ${id}_1`, `after ${id}_0`, `before ${id}_1`, `after ${id}_1`]);
});

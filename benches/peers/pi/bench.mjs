#!/usr/bin/env node
// Times Pi's own tool pipeline (Pi = npm @earendil-works/pi-* 1.6.0) for toolgate's
// side-by-side benchmark. Everything runs in-process through the real packages:
// pi-agent-core's Agent (its agent loop, parallel tool execution), pi-coding-agent's
// read tool, and pi-ai's faux provider as the model (no network).
//
//   bench.mjs --case reads1000|trivial|trivial100 --iters N --dir WORKSPACE
//             [--warmup W] [--report] [--driver agent|loop] [--chunk-tokens T]
//
// stdout: ONLY the total elapsed nanoseconds of the N timed iterations (an integer).
// stderr: logs, and with --report a human summary.

import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { Agent, runAgentLoop } from "@earendil-works/pi-agent-core";
import { createModels, fauxAssistantMessage, fauxProvider, fauxToolCall } from "@earendil-works/pi-ai";
import { createReadTool } from "@earendil-works/pi-coding-agent";

const log = (...a) => console.error("[pi-bench]", ...a);
const die = (msg) => {
	console.error(`[pi-bench] FATAL: ${msg}`);
	process.exit(1);
};

// ---------------------------------------------------------------- arguments
function parseArgs(argv) {
	const out = { report: false, driver: "agent", chunkTokens: 1_000_000 };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const val = () => {
			if (i + 1 >= argv.length) die(`missing value for ${a}`);
			return argv[++i];
		};
		switch (a) {
			case "--case": out.case = val(); break;
			case "--iters": out.iters = Number(val()); break;
			case "--dir": out.dir = val(); break;
			case "--warmup": out.warmup = Number(val()); break;
			case "--driver": out.driver = val(); break;
			case "--chunk-tokens": out.chunkTokens = Number(val()); break;
			case "--report": out.report = true; break;
			case "-h": case "--help":
				console.error("usage: bench.mjs --case reads1000|trivial|trivial100 --iters N --dir DIR [--warmup W] [--report] [--driver agent|loop] [--chunk-tokens T]");
				process.exit(0);
			default: die(`unknown argument: ${a}`);
		}
	}
	if (!out.case) die("--case is required");
	if (!Number.isInteger(out.iters) || out.iters < 0) die("--iters must be a non-negative integer");
	if (!out.dir) die("--dir is required");
	if (!["agent", "loop"].includes(out.driver)) die("--driver must be agent or loop");
	if (!(out.chunkTokens >= 1)) die("--chunk-tokens must be >= 1");
	return out;
}

const args = parseArgs(process.argv.slice(2));

// ---------------------------------------------------------------- cases
const SMALL_FILE = "small.txt";
const SMALL_TEXT = Array.from({ length: 20 }, (_, i) => `line ${i + 1}: the quick brown fox jumps over the lazy dog`).join("\n") + "\n";

const trivialTool = {
	name: "trivial",
	label: "trivial",
	description: "Returns a constant text.",
	parameters: { type: "object", properties: { x: { type: "number" } } },
	execute: async () => ({ content: [{ type: "text", text: "ok" }], details: {} }),
};

function makeCase(name, dir) {
	switch (name) {
		case "reads1000": {
			mkdirSync(dir, { recursive: true });
			const file = resolve(dir, SMALL_FILE);
			if (!existsSync(file)) writeFileSync(file, SMALL_TEXT);
			if (!statSync(file).isFile()) die(`${file} exists and is not a regular file`);
			const text = readFileSync(file, "utf8");
			return {
				calls: 1000,
				tools: [createReadTool(dir)],
				toolName: "read",
				argsFor: () => ({ path: SMALL_FILE }),
				// Pi's read returns a small file's text unchanged (final newline included).
				expectText: text,
			};
		}
		case "trivial":
		case "trivial100":
			return {
				calls: name === "trivial" ? 1 : 100,
				tools: [trivialTool],
				toolName: "trivial",
				argsFor: (i) => ({ x: i }),
				expectText: "ok",
			};
		default:
			die(`unknown case: ${name} (reads1000, trivial, trivial100)`);
	}
}

const spec = makeCase(args.case, resolve(args.dir));
const warmup = args.warmup ?? (spec.calls >= 1000 ? 5 : spec.calls >= 100 ? 50 : 500);

// ---------------------------------------------------------------- Pi setup
// One-chunk streaming per content block by default (--chunk-tokens 1e6) so the faux model's
// artificial token-splitting does not dominate; pass e.g. --chunk-tokens 4 for Pi's default-ish split.
const faux = fauxProvider({ tokenSize: { min: args.chunkTokens, max: args.chunkTokens } });
const models = createModels();
models.setProvider(faux.provider);
const model = faux.getModel();
const streamFn = models.streamSimple.bind(models);

// The scripted turn: one assistant message with all calls, then a final text answer.
const toolCallMessage = fauxAssistantMessage(
	Array.from({ length: spec.calls }, (_, i) => fauxToolCall(spec.toolName, spec.argsFor(i), { id: `call_${i}` })),
	{ stopReason: "toolUse" },
);
const finalMessage = fauxAssistantMessage("done");

const agent = new Agent({
	initialState: { systemPrompt: "toolgate peer benchmark", model, tools: spec.tools },
	streamFn,
	toolExecution: "parallel", // Pi's default, stated explicitly
});

// Low-level driver (--driver loop): Pi's runAgentLoop without the Agent's state bookkeeping.
const systemMessage = agent.state.messages[0];
const loopConfig = {
	model,
	convertToLlm: (msgs) => msgs.filter((m) => ["system", "user", "assistant", "toolResult"].includes(m.role)),
	toolExecution: "parallel",
};
const noEmit = async () => {};

/** Runs one iteration and returns the transcript it produced (for checking). */
async function runOnce(emit) {
	if (args.driver === "agent") {
		await agent.prompt("go");
		return agent.state.messages;
	}
	const context = { messages: [systemMessage], tools: spec.tools };
	const user = { role: "user", content: [{ type: "text", text: "go" }], timestamp: Date.now() };
	const newMessages = await runAgentLoop([user], context, loopConfig, emit ?? noEmit, undefined, streamFn);
	return [systemMessage, ...newMessages];
}

function prepare(listener) {
	if (args.driver === "agent") agent.reset();
	faux.setResponses([toolCallMessage, finalMessage]);
	return listener;
}

/** Cheap structural check after every iteration (outside the timed region). */
function checkShape(messages) {
	const results = messages.filter((m) => m.role === "toolResult");
	const assistants = messages.filter((m) => m.role === "assistant");
	if (results.length !== spec.calls) die(`expected ${spec.calls} tool results, got ${results.length}`);
	if (assistants.length !== 2) die(`expected 2 assistant messages, got ${assistants.length}`);
	const last = assistants[1];
	if (last.stopReason !== "stop" || last.content[0]?.text !== "done")
		die(`final assistant message is not the scripted answer: ${JSON.stringify(last).slice(0, 500)}`);
	if (faux.getPendingResponseCount() !== 0) die("faux provider has unconsumed responses");
	if (args.driver === "agent" && agent.state.errorMessage) die(`agent error: ${agent.state.errorMessage}`);
	return results;
}

/** Full check, once at start: every result is a non-error carrying the expected text. */
function checkContent(messages) {
	const results = checkShape(messages);
	results.forEach((r, i) => {
		if (r.isError) die(`tool result ${i} is an error: ${JSON.stringify(r.content)}`);
		if (r.toolCallId !== `call_${i}`) die(`tool result ${i} out of order: ${r.toolCallId}`);
		const text = r.content?.[0]?.type === "text" ? r.content[0].text : undefined;
		if (text !== spec.expectText)
			die(`tool result ${i} text mismatch:\n--- got ---\n${text}\n--- expected ---\n${spec.expectText}`);
	});
}

// ---------------------------------------------------------------- run
async function main() {
	// Verify once, loudly.
	prepare();
	checkContent(await runOnce());
	log(`verified: case=${args.case} calls=${spec.calls} driver=${args.driver}: all results ok, text matches`);

	for (let i = 0; i < warmup; i++) {
		prepare();
		checkShape(await runOnce());
	}

	const perIter = [];
	let total = 0n;
	for (let i = 0; i < args.iters; i++) {
		prepare();
		const t0 = process.hrtime.bigint();
		const messages = await runOnce();
		const dt = process.hrtime.bigint() - t0;
		total += dt;
		perIter.push(dt);
		checkShape(messages);
	}

	process.stdout.write(`${total}\n`);

	if (args.report) await report(perIter, total);
}

async function report(perIter, total) {
	const n = perIter.length;
	const ns = perIter.map(Number).sort((a, b) => a - b);
	const mean = n ? Number(total) / n : NaN;
	const median = n ? ns[Math.floor(n / 2)] : NaN;
	const perCallUs = mean / spec.calls / 1000;
	const fmtMs = (x) => (x / 1e6).toFixed(3) + " ms";
	log(`case=${args.case} driver=${args.driver} calls/iter=${spec.calls} iters=${n} warmup=${warmup} node=${process.version}`);
	log(`  per iteration: mean ${fmtMs(mean)}  median ${fmtMs(median)}  min ${fmtMs(ns[0])}  max ${fmtMs(ns[n - 1])}`);
	log(`  per call:      ${perCallUs.toFixed(2)} µs  (${Math.round(1e6 / perCallUs).toLocaleString("en-US")} calls/s)`);

	// One instrumented iteration (not part of the total): phases from loop events.
	const t = {};
	const stamp = (k) => { t[k] ??= process.hrtime.bigint(); };
	let ends = 0;
	let resultEnds = 0;
	const listener = (e) => {
		if (e.type === "message_start" && e.message.role === "assistant") stamp(t.tool0 ? "final0" : "model0");
		if (e.type === "tool_execution_start") stamp("tool0");
		if (e.type === "tool_execution_end" && ++ends === spec.calls) stamp("toolEnd");
		if (e.type === "message_end" && e.message.role === "toolResult" && ++resultEnds === spec.calls) stamp("resultsEnd");
	};
	let unsubscribe = () => {};
	if (args.driver === "agent") unsubscribe = agent.subscribe(listener);
	prepare();
	t.start = process.hrtime.bigint();
	await runOnce(async (e) => listener(e));
	t.end = process.hrtime.bigint();
	unsubscribe();
	const d = (a, b) => fmtMs(Number(t[b] - t[a]));
	log("  phases of one instrumented iteration (listener attached, so slightly slower):");
	log(`    prompt -> first assistant event:          ${d("start", "model0")}`);
	log(`    faux model streams the ${spec.calls}-call message: ${d("model0", "tool0")}`);
	log(`    tool batch (first start -> last end):     ${d("tool0", "toolEnd")}`);
	log(`    tool result messages emitted:             ${d("toolEnd", "resultsEnd")}`);
	log(`    final answer turn + agent_end:            ${d("resultsEnd", "end")}`);
	log(`    whole iteration:                          ${d("start", "end")}`);
}

main().catch((err) => die(err?.stack ?? String(err)));

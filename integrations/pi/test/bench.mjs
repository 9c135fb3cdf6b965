// Pi's own loop on 1000 reads, with and without the toolgate extension.
//
// One timed run = one `session.prompt("go")` of a real Pi 1.6 AgentSession
// whose faux model makes 1000 `read {path: "small.txt"}` calls in one
// assistant message (Pi's default parallel mode: tool_call handlers run one
// after another in preflight, the reads run together, tool_result handlers
// as each read ends), then answers "done". Each run gets a fresh session
// (created, and warmed up by one untimed read, outside the clock), and the
// runs alternate between with and without, so load on the machine falls on
// both alike. Prints the median and the slowdown.
//
//   TOOLGATE_BIN=target/release/toolgate node bench.mjs [RUNS]

import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { openSession, workspace } from "./harness.mjs";

const runs = Number(process.argv[2] ?? 10);
const CALLS = 1000;
const text = Array.from({ length: 20 }, (_, i) => `line ${i + 1}: the quick brown fox jumps over the lazy dog`).join("\n") + "\n";
const dir = workspace({ "small.txt": text });
// An extension with empty tool_call and tool_result handlers: what any
// extension costs in Pi's loop, apart from what toolgate does in them.
const NOOP = fileURLToPath(new URL("./noop-extension.ts", import.meta.url));

async function once(extension) {
	const pi = await openSession(dir, { extension });
	try {
		const [warm] = await pi.turn([["read", { path: "small.txt" }]]);
		if (warm.isError) throw new Error(`warm-up read failed: ${warm.text}`);
		const calls = Array.from({ length: CALLS }, () => ["read", { path: "small.txt" }]);
		const started = process.hrtime.bigint();
		const results = await pi.turn(calls);
		const ns = Number(process.hrtime.bigint() - started);
		for (const r of results) {
			if (r.isError || r.text !== text) throw new Error(`a read went wrong: ${r.text}`);
		}
		return ns / 1e6;
	} finally {
		await pi.close();
	}
}

const times = { without: [], noop: [], with: [] };
for (let i = 0; i < runs + 1; i++) {
	const a = await once(false);
	const n = await once(NOOP);
	const b = await once(true);
	// The first round warms up the process (JIT, module caches).
	if (i > 0) {
		times.without.push(a);
		times.noop.push(n);
		times.with.push(b);
	}
}
const median = (xs) => {
	const s = [...xs].sort((x, y) => x - y);
	return s[Math.floor(s.length / 2)];
};
const w = median(times.without);
const t = median(times.with);
const n = median(times.noop);
console.log(`Pi 1.6 loop, ${CALLS} reads in one message, median of ${runs} runs each:`);
console.log(`  without the extension  ${w.toFixed(1)} ms  (${((w * 1000) / CALLS).toFixed(1)} µs per call)`);
console.log(`  a no-op extension      ${n.toFixed(1)} ms  (${((n * 1000) / CALLS).toFixed(1)} µs per call)`);
console.log(`  with toolgate          ${t.toFixed(1)} ms  (${((t * 1000) / CALLS).toFixed(1)} µs per call)`);
console.log(`  slowdown with toolgate ${(((t - w) / w) * 100).toFixed(1)} % (a no-op extension: ${(((n - w) / w) * 100).toFixed(1)} %)`);
rmSync(dir, { recursive: true, force: true });
process.exit(0);

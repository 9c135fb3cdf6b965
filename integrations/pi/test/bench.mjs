// Pi's own loop on 1000 reads, with and without the toolgate extension.
//
// One timed run = one `session.prompt("go")` of a real Pi 1.6 AgentSession
// whose faux model makes 1000 `read {path: "small.txt"}` calls in one
// assistant message (Pi's default parallel mode: tool_call handlers run one
// after another in preflight, the reads run together, tool_result handlers
// as each read ends), then answers "done". Each run gets a fresh session
// (created, and warmed up by one untimed read, outside the clock), and the
// runs alternate between with and without, so load on the machine falls on
// both alike. Prints the median and the best run, the slowdown, and the CPU
// time each run used (Pi's process, plus the bridge's with toolgate): on a
// loaded machine wall-clock times swing with the load, CPU time much less.
//
//   TOOLGATE_BIN=target/release/toolgate node bench.mjs [RUNS]

import { readFileSync, rmSync } from "node:fs";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";

import { childPids, openSession, workspace } from "./harness.mjs";

const runs = Number(process.argv[2] ?? 10);
const CALLS = 1000;
const text = Array.from({ length: 20 }, (_, i) => `line ${i + 1}: the quick brown fox jumps over the lazy dog`).join("\n") + "\n";
const dir = workspace({ "small.txt": text });
// An extension with empty tool_call and tool_result handlers: what any
// extension costs in Pi's loop, apart from what toolgate does in them.
const NOOP = fileURLToPath(new URL("./noop-extension.ts", import.meta.url));

const bridgeName = process.env.TOOLGATE_BIN ? basename(process.env.TOOLGATE_BIN).slice(0, 15) : "toolgate";
/** CPU time (ms) the newest bridge child has used so far (0 when there is none). */
function bridgeCpuMs() {
	const pids = childPids(bridgeName);
	if (pids.length === 0) return 0;
	const stat = readFileSync(`/proc/${Math.max(...pids)}/stat`, "utf8");
	const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
	// utime and stime, in clock ticks (100 per second on Linux).
	return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

async function once(extension) {
	const pi = await openSession(dir, { extension });
	try {
		const [warm] = await pi.turn([["read", { path: "small.txt" }]]);
		if (warm.isError) throw new Error(`warm-up read failed: ${warm.text}`);
		const calls = Array.from({ length: CALLS }, () => ["read", { path: "small.txt" }]);
		const bridgeCpu = bridgeCpuMs();
		const cpu = process.cpuUsage();
		const started = process.hrtime.bigint();
		const results = await pi.turn(calls);
		const ns = Number(process.hrtime.bigint() - started);
		const used = process.cpuUsage(cpu);
		const cpuMs = (used.user + used.system) / 1000 + (bridgeCpuMs() - bridgeCpu);
		for (const r of results) {
			if (r.isError || r.text !== text) throw new Error(`a read went wrong: ${r.text}`);
		}
		return { ms: ns / 1e6, cpuMs };
	} finally {
		await pi.close();
	}
}

const times = { without: [], noop: [], with: [] };
const cpu = { without: [], noop: [], with: [] };
for (let i = 0; i < runs + 1; i++) {
	const a = await once(false);
	const n = await once(NOOP);
	const b = await once(true);
	// The first round warms up the process (JIT, module caches).
	if (i > 0) {
		for (const [k, v] of [["without", a], ["noop", n], ["with", b]]) {
			times[k].push(v.ms);
			cpu[k].push(v.cpuMs);
		}
	}
}
const median = (xs) => {
	const s = [...xs].sort((x, y) => x - y);
	return s[Math.floor(s.length / 2)];
};
const best = (xs) => Math.min(...xs);
const pct = (x, base) => `${x >= base ? "+" : ""}${(((x - base) / base) * 100).toFixed(1)} %`;
console.log(`Pi 1.6 loop, ${CALLS} reads in one message, ${runs} runs each (median / best; CPU time median):`);
const rows = [
	["without the extension", "without"],
	["a no-op extension", "noop"],
	["with toolgate", "with"],
];
for (const [label, k] of rows) {
	const [m, b, c] = [median(times[k]), best(times[k]), median(cpu[k])];
	console.log(
		`  ${label.padEnd(22)} ${m.toFixed(1).padStart(7)} ms ${pct(m, median(times.without)).padStart(8)}` +
			`   best ${b.toFixed(1).padStart(7)} ms ${pct(b, best(times.without)).padStart(8)}` +
			`   CPU ${c.toFixed(1).padStart(7)} ms ${pct(c, median(cpu.without)).padStart(8)}`,
	);
}
rmSync(dir, { recursive: true, force: true });
process.exit(0);

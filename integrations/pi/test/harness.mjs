// A real Pi 1.6 AgentSession, offline: pi-ai's faux provider scripts the
// model's turns, the toolgate extension is loaded through
// DefaultResourceLoader exactly as `pi install ./integrations/pi` would
// load it, and nothing outside a temporary folder is touched.

import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { fauxAssistantMessage, fauxProvider, fauxToolCall } from "@earendil-works/pi-ai";
import {
	createAgentSession,
	DefaultResourceLoader,
	ModelRuntime,
	SessionManager,
	SettingsManager,
} from "@earendil-works/pi-coding-agent";

const here = dirname(fileURLToPath(import.meta.url));
/** The extension as the package declares it. */
export const EXTENSION = resolve(here, "..", JSON.parse(readFileSync(resolve(here, "../package.json"), "utf8")).pi.extensions[0]);

export { fauxAssistantMessage, fauxToolCall };

/** A workspace folder with `files` (relative path -> text). */
export function workspace(files) {
	const dir = mkdtempSync(join(tmpdir(), "toolgate-pi-"));
	for (const [rel, text] of Object.entries(files)) {
		mkdirSync(dirname(join(dir, rel)), { recursive: true });
		writeFileSync(join(dir, rel), text);
	}
	return dir;
}

/** A session in `cwd` with the extension loaded (or not: `extension: false`; or another extension file's path). */
export async function openSession(cwd, { extension = true, extra = [] } = {}) {
	if (extension === true && !process.env.TOOLGATE_BIN) {
		throw new Error("TOOLGATE_BIN must name the toolgate binary under test");
	}
	const agentDir = mkdtempSync(join(tmpdir(), "toolgate-pi-agent-"));
	const faux = fauxProvider({ tokenSize: { min: 1_000_000, max: 1_000_000 } });
	const model = faux.getModel();
	const modelRuntime = await ModelRuntime.create({
		authPath: join(agentDir, "auth.json"),
		modelsPath: null,
		refreshOnCreate: false,
	});
	modelRuntime.registerProvider(model.provider, {
		api: model.api,
		apiKey: "x",
		baseUrl: "http://127.0.0.1:9",
		streamSimple: (m, c, o) => faux.provider.streamSimple(m, c, o),
		models: [
			{
				id: model.id,
				name: model.name ?? model.id,
				api: model.api,
				reasoning: false,
				input: ["text"],
				cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
				contextWindow: model.contextWindow ?? 128000,
				maxTokens: model.maxTokens ?? 16384,
			},
		],
	});
	const resourceLoader = new DefaultResourceLoader({
		cwd,
		agentDir,
		additionalExtensionPaths: [...(extension === true ? [EXTENSION] : extension ? [extension] : []), ...extra],
	});
	await resourceLoader.reload();
	const { session } = await createAgentSession({
		cwd,
		agentDir,
		modelRuntime,
		model: modelRuntime.getModel(model.provider, model.id),
		resourceLoader,
		sessionManager: SessionManager.inMemory(),
		settingsManager: SettingsManager.inMemory(),
	});
	await session.bindExtensions?.({});
	const errors = [];
	session.subscribe?.((event) => {
		if (event.type === "extension_error") errors.push(event);
	});
	return {
		session,
		faux,
		errors,
		/** Runs one model turn making `calls` (one assistant message), then "done"; returns their results. */
		async turn(calls) {
			const before = session.messages.length;
			faux.setResponses([
				fauxAssistantMessage(
					calls.map(([name, args], i) => fauxToolCall(name, args, { id: `t${before}_${i}` })),
					{ stopReason: "toolUse" },
				),
				fauxAssistantMessage("done"),
			]);
			await session.prompt("go");
			const results = session.messages.slice(before).filter((m) => m.role === "toolResult");
			if (results.length !== calls.length) {
				throw new Error(`expected ${calls.length} tool results, got ${results.length}`);
			}
			return results.map((r) => ({ ...r, text: r.content.map((c) => c.text ?? "").join("\n") }));
		},
		async close() {
			session.dispose();
			// Give the bridge a moment to see its stdin close.
			await new Promise((r) => setTimeout(r, 50));
			rmSync(agentDir, { recursive: true, force: true });
		},
	};
}

/** Pids of this process's children running `name` (read from /proc). */
export function childPids(name) {
	const pids = [];
	for (const entry of readdirSync("/proc")) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
			const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
			const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
			if (ppid === process.pid && comm === name) pids.push(Number(entry));
		} catch {
			// The process ended while we looked.
		}
	}
	return pids;
}

/** Waits until `f()` is true, or throws after `ms`. */
export async function eventually(what, f, ms = 15000) {
	const deadline = Date.now() + ms;
	while (!(await f())) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 50));
	}
}

// toolgate for Pi: puts Pi's own tool calls behind a toolgate policy.
//
// On session_start the extension starts `toolgate bridge --stdio` (the binary
// from TOOLGATE_BIN, else `toolgate` on PATH) in the project folder, so the
// project's policies/ and tool-manifests/ apply (else toolgate's embedded
// defaults). Then, for every call Pi makes — the model's and nested ones
// (`parentToolCallId`, codemode scripts) alike:
//
// - tool_call asks the bridge `before`: deny blocks with toolgate's reason
//   (and its terminate flag); ask goes to ctx.ui.confirm when there is a UI,
//   and is blocked with "Approval required" when there is none (print, JSON
//   and SDK sessions).
//   The calls of one model message are asked all at once when the message
//   ends (Pi decides them one after another; one round trip after another
//   would add up), and each tool_call uses its answer only while nothing
//   could have changed it (see `early` below).
// - tool_result asks the bridge `after`: the redacted content, details and
//   structured content (and the result rules' is_error) replace the result.
//   Pi runs tool_result for failed calls too, so error texts are redacted.
// - the policy's active tools are applied with pi.setActiveTools at start
//   and whenever the bridge reports a reload.
//
// Fail closed: when the bridge is missing, has died, answers with an error
// or does not answer within TOOLGATE_BRIDGE_TIMEOUT_MS (default 10000), the
// call is blocked, or its result withheld, with a message saying why. A
// tool_result handler must never throw: Pi would log the error and pass the
// unredacted result on.
//
// No build step: Pi loads this TypeScript file as it is.

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";

import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

type Json = any;

const DEFAULT_TIMEOUT_MS = 10_000;
const STDERR_TAIL = 4000;

/** A request waiting for its answer. */
interface Waiting {
	resolve: (v: Json) => void;
	reject: (e: Error) => void;
	/** Date.now() after which it is refused. */
	deadline: number;
}

/** One `toolgate bridge --stdio` process and its pending requests. */
class Bridge {
	private child?: ChildProcessWithoutNullStreams;
	/** In the order sent, so the first one has the earliest deadline. */
	private pending = new Map<number, Waiting>();
	/** One timer for all deadlines (a timer per request costs more than the request). */
	private sweeper?: NodeJS.Timeout;
	private nextId = 1;
	/** Request lines not written yet: written together once per event-loop turn. */
	private queued: string[] = [];
	private flushScheduled = false;
	/** The start of an answer line whose end has not arrived yet. */
	private partial = "";
	private stderr = "";
	/** Why the bridge cannot answer (missing, exited); undefined while it can. */
	dead?: string;
	/** Called with each `{"type":"reloaded",…}` line. */
	onReloaded?: (line: Json) => void;

	constructor(
		readonly bin: string,
		readonly args: string[],
		readonly cwd: string,
		readonly timeoutMs: number,
	) {}

	start(): void {
		let child: ChildProcessWithoutNullStreams;
		try {
			child = spawn(this.bin, this.args, { cwd: this.cwd, stdio: ["pipe", "pipe", "pipe"] });
		} catch (e) {
			this.fail(`the toolgate binary \`${this.bin}\` could not be started (${(e as Error).message})`);
			return;
		}
		this.child = child;
		// The bridge must never keep the host alive: when Pi exits, the
		// bridge sees its stdin close and exits too. The deadline timer keeps
		// the host waiting while a request is pending.
		child.unref();
		(child.stdin as any).unref?.();
		(child.stdout as any).unref?.();
		(child.stderr as any).unref?.();
		child.on("error", (e: NodeJS.ErrnoException) => {
			const why =
				e.code === "ENOENT"
					? `the toolgate binary \`${this.bin}\` was not found; install toolgate or set TOOLGATE_BIN to its path`
					: `the toolgate bridge failed (${e.message})`;
			this.fail(why);
		});
		// "close", not "exit": by then stderr has been read to its end.
		child.on("close", (code, signal) => {
			const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
			const tail = this.stderr.trim();
			this.fail(`the toolgate bridge ${how}${tail ? `: ${tail}` : ""}`);
		});
		child.stdin.on("error", () => {});
		child.stderr.setEncoding("utf8");
		child.stderr.on("data", (chunk: string) => {
			this.stderr = (this.stderr + chunk).slice(-STDERR_TAIL);
		});
		child.stdout.setEncoding("utf8");
		child.stdout.on("data", (chunk: string) => this.receive(chunk));
	}

	/** Splits what arrived into answer lines (the bridge writes whole lines, often many at once). */
	private receive(chunk: string): void {
		let start = 0;
		let end = chunk.indexOf("\n");
		if (end < 0) {
			this.partial += chunk;
			return;
		}
		let line = this.partial + chunk.slice(0, end);
		this.partial = "";
		for (;;) {
			this.answer(line);
			start = end + 1;
			end = chunk.indexOf("\n", start);
			if (end < 0) break;
			line = chunk.slice(start, end);
		}
		this.partial = chunk.slice(start);
	}

	private answer(line: string): void {
		let msg: Json;
		try {
			msg = JSON.parse(line);
		} catch {
			return;
		}
		if (msg && msg.type === "reloaded" && msg.id === undefined) {
			this.onReloaded?.(msg);
			return;
		}
		const waiting = this.pending.get(msg?.id);
		if (!waiting) return;
		this.pending.delete(msg.id);
		if (this.pending.size === 0) this.sweeper?.unref();
		if (typeof msg.error === "string") waiting.reject(new Error(msg.error));
		else waiting.resolve(msg);
	}

	/** Refuses every request whose deadline has passed, then waits for the next deadline. */
	private sweep(): void {
		const now = Date.now();
		for (const [id, waiting] of this.pending) {
			if (waiting.deadline > now) {
				this.sweeper = setTimeout(() => this.sweep(), waiting.deadline - now + 1);
				return;
			}
			this.pending.delete(id);
			waiting.reject(new Error(`the toolgate bridge did not answer within ${this.timeoutMs} ms`));
		}
		this.sweeper = undefined;
	}

	private fail(why: string): void {
		if (this.dead) return;
		this.dead = why;
		if (this.sweeper) clearTimeout(this.sweeper);
		this.sweeper = undefined;
		this.queued = [];
		for (const [id, waiting] of this.pending) {
			waiting.reject(new Error(why));
			this.pending.delete(id);
		}
	}

	/** Sends one request; rejects when the bridge is dead, errs or is late. */
	request(body: Json): Promise<Json> {
		if (this.dead) return Promise.reject(new Error(this.dead));
		const child = this.child;
		if (!child) return Promise.reject(new Error("the toolgate bridge was not started"));
		const id = this.nextId++;
		return new Promise((resolve, reject) => {
			this.pending.set(id, { resolve, reject, deadline: Date.now() + this.timeoutMs });
			if (!this.sweeper) this.sweeper = setTimeout(() => this.sweep(), this.timeoutMs + 1);
			else this.sweeper.ref();
			this.queued.push(`{"id":${id},${JSON.stringify(body).slice(1)}\n`);
			if (!this.flushScheduled) {
				this.flushScheduled = true;
				setImmediate(() => this.flush());
			}
		});
	}

	/** Writes every queued request line in one write. */
	private flush(): void {
		this.flushScheduled = false;
		if (this.queued.length === 0 || !this.child) return;
		const text = this.queued.length === 1 ? this.queued[0] : this.queued.join("");
		this.queued = [];
		this.child.stdin.write(text, (e) => {
			if (e) this.fail(`the toolgate bridge's stdin is closed (${e.message})`);
		});
	}

	stop(): void {
		this.child?.stdin.end();
		this.child?.kill();
		this.fail("the session ended");
	}
}

/** The bridge's command line from the environment. */
function bridgeCommand(cwd: string): { bin: string; args: string[]; timeoutMs: number } {
	const env = process.env;
	const args = ["bridge", "--stdio", "--workspace", cwd];
	if (env.TOOLGATE_POLICIES) args.push("--policies", env.TOOLGATE_POLICIES);
	if (env.TOOLGATE_MANIFESTS) args.push("--manifests", env.TOOLGATE_MANIFESTS);
	if (env.TOOLGATE_PROFILE) args.push("--profile", env.TOOLGATE_PROFILE);
	const timeout = Number(env.TOOLGATE_BRIDGE_TIMEOUT_MS);
	return {
		bin: env.TOOLGATE_BIN || "toolgate",
		args,
		timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : DEFAULT_TIMEOUT_MS,
	};
}

/** A `before` asked ahead, when the model's message arrived, for one of its tool calls. */
interface Early {
	tool: string;
	/** The input as sent (JSON). */
	input: string;
	verdict: Promise<Json>;
}

export default function toolgate(pi: ExtensionAPI) {
	let bridge: Bridge | undefined;
	/**
	 * Decisions asked ahead, by tool call id. Pi decides a message's calls
	 * one after another, so asking for each only in its tool_call would put
	 * one round trip per call in a row; instead all are asked at once when
	 * the message ends, and each tool_call takes its answer if nothing that
	 * could change it happened since: none is used once any tool has run
	 * (a tool_result: in Pi's sequential mode the next call comes after the
	 * previous one ran) or the policy reloaded, and one is used only for the
	 * very tool and input the tool_call carries.
	 */
	let early = new Map<string, Early>();

	/** Pi's tools that toolgate's manifests describe: on iff the policy's active set has them. */
	async function applyActiveTools(): Promise<void> {
		if (!bridge) return;
		const answer = await bridge.request({ type: "tools" });
		const active: string[] = answer.tools ?? [];
		const known: string[] = answer.known ?? active;
		const current = new Set(pi.getActiveTools());
		const next = pi
			.getAllTools()
			.map((t) => t.name)
			.filter((name) => (known.includes(name) ? active.includes(name) : current.has(name)));
		pi.setActiveTools(next);
	}

	pi.on("session_start", async (_event, ctx) => {
		bridge?.stop();
		const { bin, args, timeoutMs } = bridgeCommand(ctx.cwd);
		const started = new Bridge(bin, args, ctx.cwd, timeoutMs);
		bridge = started;
		started.onReloaded = () => {
			early = new Map();
			applyActiveTools().catch(() => {});
		};
		started.start();
		try {
			await applyActiveTools();
		} catch (e) {
			// Every call is blocked from now on, with this reason.
			if (!started.dead) started.dead = (e as Error).message;
			if (ctx.hasUI) ctx.ui.notify(`toolgate: ${started.dead}; every tool call is blocked`, "error");
		}
	});

	pi.on("session_shutdown", async () => {
		bridge?.stop();
		bridge = undefined;
	});

	pi.on("message_end", async (event) => {
		const message: Json = event.message;
		if (!bridge || bridge.dead || message?.role !== "assistant" || !Array.isArray(message.content)) return;
		early = new Map();
		for (const part of message.content) {
			if (part?.type !== "toolCall" || typeof part.id !== "string") continue;
			const input = JSON.stringify(part.arguments ?? {});
			const verdict = bridge.request({ type: "before", call_id: part.id, tool: part.name, input: part.arguments ?? {} });
			// Used or not, a refusal here must not surface as an unhandled rejection.
			verdict.catch(() => {});
			early.set(part.id, { tool: part.name, input, verdict });
		}
	});

	pi.on("tool_call", async (event, ctx) => {
		const blocked = (why: string) => ({
			block: true as const,
			reason: `toolgate: ${why}; the call is blocked.`,
		});
		if (!bridge) return blocked("the toolgate bridge is not running (no session_start)");
		let verdict: Json;
		const asked = event.parentToolCallId ? undefined : early.get(event.toolCallId);
		if (asked) early.delete(event.toolCallId);
		try {
			if (asked && asked.tool === event.toolName && asked.input === JSON.stringify(event.input ?? {})) {
				verdict = await asked.verdict;
			} else verdict = await bridge.request({
				type: "before",
				call_id: event.toolCallId,
				tool: event.toolName,
				input: event.input,
				...(event.parentToolCallId ? { parent_call_id: event.parentToolCallId } : {}),
			});
		} catch (e) {
			return blocked((e as Error).message);
		}
		switch (verdict.decision) {
			case "allow":
				return undefined;
			case "deny":
				return { block: true, reason: verdict.reason, terminate: verdict.terminate === true };
			case "ask": {
				if (!ctx.hasUI) {
					return {
						block: true,
						reason: `Approval required: ${verdict.reason} No one can approve it in this session (it has no UI), so the call was not run.`,
					};
				}
				const ok = await ctx.ui.confirm(`toolgate: allow ${event.toolName}?`, verdict.reason);
				if (ok) return undefined;
				return { block: true, reason: `The user declined this call. (${verdict.reason})` };
			}
			default:
				return blocked(`the bridge answered an unknown decision ${JSON.stringify(verdict.decision)}`);
		}
	});

	pi.on("tool_result", async (event) => {
		// A tool has run: decisions asked before it may be stale now.
		if (early.size > 0) early = new Map();
		const withheld = (why: string) => ({
			content: [{ type: "text" as const, text: `toolgate: the result of ${event.toolName} is withheld: ${why}.` }],
			details: {},
			isError: true,
		});
		try {
			if (!bridge) return withheld("the toolgate bridge is not running (no session_start)");
			const after = await bridge.request({
				type: "after",
				call_id: event.toolCallId,
				tool: event.toolName,
				input: event.input,
				content: event.content ?? [],
				details: event.details ?? {},
				is_error: event.isError === true,
				...(event.structuredContent === undefined ? {} : { structured_content: event.structuredContent }),
			});
			return {
				content: after.content,
				details: after.details,
				isError: after.is_error === true,
				...(after.structured_content === undefined ? {} : { structuredContent: after.structured_content }),
			};
		} catch (e) {
			return withheld((e as Error).message);
		}
	});
}

// For extension.test.mjs: a tool that reads a file through another tool
// (ctx.executeTool), as codemode scripts do, so the nested call — with its
// parentToolCallId — goes through toolgate like the model's own calls.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.registerTool({
		name: "read_via",
		label: "read_via",
		description: "Reads a file through the read tool.",
		parameters: { type: "object", properties: { path: { type: "string" } }, required: ["path"] } as any,
		async execute(_id: string, params: { path: string }, signal: AbortSignal, _onUpdate: unknown, ctx: any) {
			const nested = await ctx.executeTool("read", { path: params.path }, { signal });
			const text = nested.result.content.map((c: any) => c.text ?? "").join("\n");
			// Whether the calling tool itself saw a raw token (the model's own
			// result is redacted anyway, as read_via's).
			const raw = /ghp_[0-9a-zA-Z]{36}/.test(text) ? "raw" : "clean";
			return { content: [{ type: "text", text: `nested ${nested.isError ? "error" : "ok"} (${raw}): ${text}` }], details: {} };
		},
	});
}

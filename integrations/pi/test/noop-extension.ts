// For bench.mjs: an extension whose tool_call and tool_result handlers do
// nothing, to tell what any such extension costs in Pi's loop from what
// toolgate's adds.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
	pi.on("tool_call", async () => undefined);
	pi.on("tool_result", async () => undefined);
}

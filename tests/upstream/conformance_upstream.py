"""An MCP server (Python SDK, mcp 2.3.0, low-level API) implementing the
fixtures the official conformance suite (@modelcontextprotocol/conformance)
tests a server with: its tools, resources, prompts, completion, logging,
progress, sampling and elicitation, with the names the suite calls.

tests/conformance/proxied.sh runs the suite against it twice: directly over
Streamable HTTP, and through `toolgate serve --http` fronting it over stdio
as a `[server]` with `prefix = ""`:

    python conformance_upstream.py stdio
    python conformance_upstream.py http     # prints "listening on URL"

The low-level API keeps every schema and content block exactly as the suite
describes it (SEP-1613's 2020-12 input schema, SEP-1034 defaults, SEP-1330
enum variants). Server-to-client messages made while a tool runs (log
records, sampling, elicitation) name the tool call as their related request,
so over Streamable HTTP they ride the call's own response stream.
"""

import json
import socket
import sys
import warnings

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.exceptions import MCPError

# The handshake era's logging and sampling are deprecated in the 2026 era;
# the suite still tests them.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated as of 2026.*")

# A 1x1 red PNG and a 44-byte silent WAV (the same bytes as
# tests/conformance/bin/fixture.sh).
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="

NO_ARGS = {"type": "object", "properties": {}}


def text(t):
    return {"type": "text", "text": t}


TOOLS = [
    ("test_simple_text", "Returns a simple text response", NO_ARGS),
    ("test_image_content", "Returns an image", NO_ARGS),
    ("test_audio_content", "Returns audio", NO_ARGS),
    ("test_embedded_resource", "Returns an embedded resource", NO_ARGS),
    ("test_multiple_content_types", "Returns text, an image and a resource", NO_ARGS),
    ("test_tool_with_logging", "Sends three log records while it runs", NO_ARGS),
    ("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100", NO_ARGS),
    ("test_error_handling", "Always fails", NO_ARGS),
    (
        "test_sampling",
        "Asks the client's model to answer a prompt",
        {
            "type": "object",
            "properties": {"prompt": {"type": "string", "description": "The prompt to send to the LLM"}},
            "required": ["prompt"],
        },
    ),
    (
        "test_elicitation",
        "Asks the user for a username and an email",
        {
            "type": "object",
            "properties": {"message": {"type": "string", "description": "The message to show the user"}},
            "required": ["message"],
        },
    ),
    ("test_elicitation_sep1034_defaults", "Elicits with defaults for every primitive type", NO_ARGS),
    ("test_elicitation_sep1330_enums", "Elicits with the five enum variants", NO_ARGS),
    ("test_reconnection", "Answers after a short pause", NO_ARGS),
    (
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": False,
        },
    ),
]

SEP1034_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verified", "default": True},
    },
}

SEP1330_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}

RESOURCES = [
    ("test://static-text", "static-text", "A static text resource", "text/plain"),
    ("test://static-binary", "static-binary", "A static binary resource (a PNG)", "image/png"),
    ("test://watched-resource", "watched-resource", "A resource to subscribe to", "text/plain"),
]

PROMPTS = [
    ("test_simple_prompt", "A prompt without arguments", []),
    (
        "test_prompt_with_arguments",
        "A prompt with two required arguments",
        [
            {"name": "arg1", "description": "First test argument", "required": True},
            {"name": "arg2", "description": "Second test argument", "required": True},
        ],
    ),
    (
        "test_prompt_with_embedded_resource",
        "A prompt embedding a resource",
        [{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}],
    ),
    ("test_prompt_with_image", "A prompt with an image", []),
]

# Completion values by argument name; the suite's example plus values that
# start with what it types ("test").
COMPLETIONS = {
    "arg1": ["paris", "park", "party", "test-one", "test-two"],
    "arg2": ["world", "test-three"],
    "id": ["123", "456"],
}

subscriptions = set()


def result(content, is_error=False):
    return types.CallToolResult.model_validate({"content": content, "isError": is_error})


async def log(ctx, message):
    await ctx.session.send_log_message(
        level="info", data=message, logger="conformance", related_request_id=ctx.request_id
    )


async def progress(ctx, value):
    await ctx.session.report_progress(value, 100)


async def elicit(ctx, message, schema):
    return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)


async def call_tool(ctx, params):
    name, args = params.name, params.arguments or {}
    if name == "test_simple_text":
        return result([text("This is a simple text response for testing.")])
    if name == "test_image_content":
        return result([{"type": "image", "data": PNG, "mimeType": "image/png"}])
    if name == "test_audio_content":
        return result([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])
    if name == "test_embedded_resource":
        return result(
            [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ]
        )
    if name == "test_multiple_content_types":
        return result(
            [
                text("Multiple content types test:"),
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": json.dumps({"test": "data", "value": 123}),
                    },
                },
            ]
        )
    if name == "test_tool_with_logging":
        await log(ctx, "Tool execution started")
        await anyio.sleep(0.05)
        await log(ctx, "Tool processing data")
        await anyio.sleep(0.05)
        await log(ctx, "Tool execution completed")
        return result([text("Tool with logging executed successfully")])
    if name == "test_tool_with_progress":
        await progress(ctx, 0)
        await anyio.sleep(0.05)
        await progress(ctx, 50)
        await anyio.sleep(0.05)
        await progress(ctx, 100)
        return result([text("Tool with progress executed successfully")])
    if name == "test_error_handling":
        return result([text("This tool intentionally returns an error for testing")], is_error=True)
    if name == "test_sampling":
        answer = await ctx.session.create_message(
            messages=[
                types.SamplingMessage(role="user", content=types.TextContent(type="text", text=args["prompt"]))
            ],
            max_tokens=100,
            related_request_id=ctx.request_id,
        )
        said = answer.content.text if answer.content.type == "text" else "(no text)"
        return result([text(f"LLM response: {said}")])
    if name == "test_elicitation":
        answer = await elicit(
            ctx,
            args["message"],
            {
                "type": "object",
                "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"},
                },
                "required": ["username", "email"],
            },
        )
        return result([text(f"User response: action={answer.action}, content={json.dumps(answer.content)}")])
    if name in ("test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums"):
        schema = SEP1034_SCHEMA if name.endswith("defaults") else SEP1330_SCHEMA
        answer = await elicit(ctx, "Please provide the values", schema)
        return result(
            [text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}")]
        )
    if name == "test_reconnection":
        await anyio.sleep(0.05)
        return result([text("Reconnection test completed")])
    if name == "json_schema_2020_12_tool":
        return result([text("JSON Schema 2020-12 tool called")])
    return result([text(f"Unknown tool: {name}")], is_error=True)


async def list_tools(ctx, params):
    return types.ListToolsResult.model_validate(
        {"tools": [{"name": n, "description": d, "inputSchema": s} for n, d, s in TOOLS]}
    )


async def list_resources(ctx, params):
    return types.ListResourcesResult.model_validate(
        {"resources": [{"uri": u, "name": n, "description": d, "mimeType": m} for u, n, d, m in RESOURCES]}
    )


async def list_resource_templates(ctx, params):
    return types.ListResourceTemplatesResult.model_validate(
        {
            "resourceTemplates": [
                {
                    "uriTemplate": "test://template/{id}/data",
                    "name": "template-data",
                    "description": "Data for an id",
                    "mimeType": "application/json",
                }
            ]
        }
    )


async def read_resource(ctx, params):
    uri = str(params.uri)
    if uri == "test://static-text":
        content = {"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."}
    elif uri == "test://static-binary":
        content = {"uri": uri, "mimeType": "image/png", "blob": PNG}
    elif uri == "test://watched-resource":
        content = {"uri": uri, "mimeType": "text/plain", "text": "Watched resource content"}
    elif uri.startswith("test://template/") and uri.endswith("/data"):
        id_ = uri[len("test://template/") : -len("/data")]
        body = {"id": id_, "templateTest": True, "data": f"Data for ID: {id_}"}
        content = {"uri": uri, "mimeType": "application/json", "text": json.dumps(body)}
    else:
        raise MCPError(code=-32002, message=f"Resource {uri} not found")
    return types.ReadResourceResult.model_validate({"contents": [content]})


async def subscribe(ctx, params):
    subscriptions.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx, params):
    subscriptions.discard(str(params.uri))
    return types.EmptyResult()


async def list_prompts(ctx, params):
    return types.ListPromptsResult.model_validate(
        {"prompts": [{"name": n, "description": d, "arguments": a} for n, d, a in PROMPTS]}
    )


async def get_prompt(ctx, params):
    name, args = params.name, params.arguments or {}
    if name == "test_simple_prompt":
        messages = [{"role": "user", "content": text("This is a simple prompt for testing.")}]
    elif name == "test_prompt_with_arguments":
        a1, a2 = args.get("arg1", ""), args.get("arg2", "")
        messages = [{"role": "user", "content": text(f"Prompt with arguments: arg1='{a1}', arg2='{a2}'")}]
    elif name == "test_prompt_with_embedded_resource":
        messages = [
            {
                "role": "user",
                "content": {
                    "type": "resource",
                    "resource": {
                        "uri": args.get("resourceUri", "test://example-resource"),
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                },
            },
            {"role": "user", "content": text("Please process the embedded resource above.")},
        ]
    elif name == "test_prompt_with_image":
        messages = [
            {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
            {"role": "user", "content": text("Please analyze the image above.")},
        ]
    else:
        raise MCPError(code=-32602, message=f"Prompt {name} not found")
    return types.GetPromptResult.model_validate({"messages": messages})


async def complete(ctx, params):
    typed = params.argument.value
    values = [v for v in COMPLETIONS.get(params.argument.name, []) if v.startswith(typed)]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))


async def set_level(ctx, params):
    return types.EmptyResult()


server = Server(
    "toolgate-conformance-upstream",
    version="1.0.0",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_list_resources=list_resources,
    on_list_resource_templates=list_resource_templates,
    on_read_resource=read_resource,
    on_subscribe_resource=subscribe,
    on_unsubscribe_resource=unsubscribe,
    on_list_prompts=list_prompts,
    on_get_prompt=get_prompt,
    on_completion=complete,
    on_set_logging_level=set_level,
)


async def run_stdio():
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(NotificationOptions()))


def run_http():
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    print(f"listening on http://127.0.0.1:{port}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        run_http()
    elif mode == "stdio":
        anyio.run(run_stdio)
    else:
        print(f"usage: {sys.argv[0]} stdio|http", file=sys.stderr)
        sys.exit(2)

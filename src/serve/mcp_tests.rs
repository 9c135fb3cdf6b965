use super::*;
use crate::tools::Content;

#[test]
fn content_blocks_are_what_their_json_reads_as() {
    // Text is built directly; it must be the block MCP's JSON gives.
    let blocks = [
        Content::text("plain"),
        Content::text(""),
        Content::text("üñí \u{0} \"quoted\"\n\ttabs"),
        Content::Image {
            data: "AAAA".into(),
            mime_type: "image/png".into(),
        },
        Content::Audio {
            data: "UklG".into(),
            mime_type: "audio/wav".into(),
        },
        Content::Resource {
            resource: serde_json::json!({"uri": "file:///a", "text": "x"}),
        },
    ];
    for content in &blocks {
        let via_json: ContentBlock =
            serde_json::from_value(serde_json::to_value(content).unwrap()).unwrap();
        let direct = content_block(content).unwrap();
        assert_eq!(direct, via_json, "{content:?}");
        assert_eq!(
            serde_json::to_value(&direct).unwrap(),
            serde_json::to_value(&via_json).unwrap()
        );
    }
    // A block that is not valid MCP still fails the result closed.
    let bad = ToolResult {
        content: vec![Content::Resource {
            resource: serde_json::json!(5),
        }],
        ..ToolResult::error("1", "t", "x")
    };
    let out = serde_json::to_value(call_tool_result(&bad)).unwrap();
    assert_eq!(out["isError"], true);
    assert!(out["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("not valid MCP content"));
}

#[tokio::test]
async fn handler_futures_stay_small() {
    // rmcp spawns one task per request holding the handler's future and
    // moves it a few times: the executor's pipeline and the upstream
    // requests are boxed away, so every handler's future is small.
    use rmcp::ServerHandler as H;
    use std::mem::size_of_val;
    let ws = tempfile::tempdir().unwrap();
    let gateway = Gateway::start(super::super::GatewayConfig {
        workspace: ws.path().into(),
        ..Default::default()
    })
    .unwrap();
    let server = McpServer::new(gateway);
    let (near, _far) = tokio::io::duplex(64);
    let running = rmcp::service::serve_directly(server.clone(), near, None);
    let cx = || RequestContext::new(rmcp::model::RequestId::Number(1), running.peer().clone());
    let call = || CallToolRequestParams::new("ls");
    let unboxed = size_of_val(&server.run_call(call(), cx()));
    let sizes = [
        size_of_val(&H::call_tool(&server, call(), cx())),
        size_of_val(&H::list_tools(&server, None, cx())),
        size_of_val(&H::set_level(
            &server,
            SetLevelRequestParams::new(LoggingLevel::Info),
            cx(),
        )),
        size_of_val(&H::list_resources(&server, None, cx())),
        size_of_val(&H::list_resource_templates(&server, None, cx())),
        size_of_val(&H::read_resource(
            &server,
            ReadResourceRequestParams::new("x"),
            cx(),
        )),
        size_of_val(&H::subscribe(
            &server,
            SubscribeRequestParams::new("x"),
            cx(),
        )),
        size_of_val(&H::unsubscribe(
            &server,
            UnsubscribeRequestParams::new("x"),
            cx(),
        )),
        size_of_val(&H::list_prompts(&server, None, cx())),
        size_of_val(&H::get_prompt(
            &server,
            GetPromptRequestParams::new("x"),
            cx(),
        )),
    ];
    for size in sizes {
        assert!(
            size <= 1024 && size * 4 < unboxed,
            "{sizes:?} (the call unboxed: {unboxed})"
        );
    }
}

#[test]
fn results_keep_mcp_content_and_error_flag() {
    let mut r = ToolResult::error("1", "t", "denied: because");
    let out = serde_json::to_value(call_tool_result(&r)).unwrap();
    assert_eq!(out["isError"], true);
    assert_eq!(out["content"][0]["text"], "denied: because");
    r.is_error = false;
    r.content = vec![Content::Image {
        data: "AAAA".into(),
        mime_type: "image/png".into(),
    }];
    let out = serde_json::to_value(call_tool_result(&r)).unwrap();
    assert_eq!(out["isError"], false);
    assert_eq!(out["content"][0]["type"], "image");
    assert_eq!(out["content"][0]["mimeType"], "image/png");
}

/// The blocks, collected into a vector sized up front, are what collecting
/// the `Result` iterator gave: every kind, in order, none, or an invalid one.
#[test]
fn results_carry_every_block_in_order_as_the_collected_blocks_did() {
    let collected = |r: &ToolResult| -> serde_json::Value {
        let content = r
            .content
            .iter()
            .map(content_block)
            .collect::<Result<Vec<ContentBlock>, _>>();
        let out = match content {
            Ok(content) if r.is_error => CallToolResult::error(content),
            Ok(content) => {
                let mut out = CallToolResult::success(content);
                out.structured_content = r.details.get("structuredContent").cloned();
                out
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                "Tool {} returned content that is not valid MCP content: {e}",
                r.name
            ))]),
        };
        serde_json::to_value(out).unwrap()
    };
    let image = Content::Image {
        data: "AAAA".into(),
        mime_type: "image/png".into(),
    };
    let resource = Content::Resource {
        resource: serde_json::json!({"uri": "file:///a", "text": "x"}),
    };
    let bad = Content::Resource {
        resource: serde_json::json!(5),
    };
    let mut r = ToolResult::error("1", "t", "first");
    r.is_error = false;
    r.details = serde_json::json!({"structuredContent": {"said": "hi"}});
    let lists = [
        vec![],
        vec![Content::text("only")],
        vec![
            Content::text("a"),
            image.clone(),
            Content::text("b"),
            resource,
        ],
        vec![Content::text("a"), bad, image],
    ];
    for content in lists {
        r.content = content;
        for is_error in [false, true] {
            r.is_error = is_error;
            let got = serde_json::to_value(call_tool_result(&r)).unwrap();
            assert_eq!(got, collected(&r), "{:?}", r.content);
        }
    }
}

use rmcp::model::{JsonRpcMessage, NumberOrString, ServerResult};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

use super::StdioTransport;
use crate::upstream::answer::CallAnswer;

/// A transport over two in-memory pipes: what the test writes to `server`
/// is the server's output; what the transport sends arrives in `sent`.
fn pair() -> (
    StdioTransport<DuplexStream, DuplexStream>,
    DuplexStream,
    DuplexStream,
) {
    let (server, read) = tokio::io::duplex(1 << 20);
    let (write, sent) = tokio::io::duplex(1 << 20);
    (
        StdioTransport::new("t", read, write, Default::default()),
        server,
        sent,
    )
}

fn request(id: i64, method: &str) -> TxJsonRpcMessage<RoleClient> {
    let params = if method == "tools/call" {
        json!({"name": "echo", "arguments": {"text": "hi"}})
    } else {
        json!({})
    };
    serde_json::from_value(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .unwrap()
}

async fn send(t: &mut StdioTransport<DuplexStream, DuplexStream>, id: i64, method: &str) {
    t.send(request(id, method)).await.unwrap();
}

async fn next(
    t: &mut StdioTransport<DuplexStream, DuplexStream>,
) -> Option<RxJsonRpcMessage<RoleClient>> {
    tokio::time::timeout(std::time::Duration::from_secs(5), t.receive())
        .await
        .expect("receive must not hang")
}

fn error_of(m: Option<RxJsonRpcMessage<RoleClient>>) -> (NumberOrString, String) {
    match m {
        Some(JsonRpcMessage::Error(e)) => (e.id.unwrap(), e.error.message.to_string()),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

#[tokio::test]
async fn a_tools_call_answer_is_json_and_other_answers_are_typed() {
    let (mut t, mut server, mut sent) = pair();
    send(&mut t, 1, "tools/call").await;
    send(&mut t, 2, "tools/list").await;
    let mut buf = vec![0; 4096];
    let n = sent.read(&mut buf).await.unwrap();
    let lines: Vec<Value> = std::str::from_utf8(&buf[..n])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["method"], "tools/call");
    assert_eq!(lines[0]["params"]["arguments"]["text"], "hi");
    assert_eq!(lines[1]["id"], 2);
    let result = json!({"content": [{"type": "text", "text": "hi"}], "isError": false});
    server
        .write_all(
            format!(
                "{}\r\n{}\n",
                json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}),
                json!({"jsonrpc": "2.0", "id": 1, "result": result})
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    match next(&mut t).await {
        Some(JsonRpcMessage::Response(r)) => {
            assert_eq!(r.id, NumberOrString::Number(2));
            assert!(
                matches!(r.result, ServerResult::ListToolsResult(_)),
                "{r:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    // A plain answer is read in one pass and filed for its call; rmcp
    // gets `null` for it.
    match next(&mut t).await {
        Some(JsonRpcMessage::Response(r)) => {
            assert_eq!(r.id, NumberOrString::Number(1));
            match r.result {
                ServerResult::CustomResult(v) => assert_eq!(v.0, Value::Null),
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    let filed = t.pending().take(&NumberOrString::Number(1));
    assert_eq!(
        filed,
        Some(CallAnswer {
            texts: vec!["hi".into()],
            structured: None,
            is_error: false
        })
    );
    // Another shape of answer is handed over as the JSON it came as.
    send(&mut t, 3, "tools/call").await;
    let image = json!({"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]});
    server
        .write_all(format!("{}\n", json!({"jsonrpc": "2.0", "id": 3, "result": image})).as_bytes())
        .await
        .unwrap();
    match next(&mut t).await {
        Some(JsonRpcMessage::Response(r)) => match r.result {
            ServerResult::CustomResult(v) => assert_eq!(v.0, image),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(t.pending().take(&NumberOrString::Number(3)), None);
}

#[tokio::test]
async fn the_answer_of_a_call_that_ended_is_not_filed() {
    let (mut t, mut server, _sent) = pair();
    send(&mut t, 1, "tools/call").await;
    // The call's future was dropped (call.rs forgets its id).
    t.pending().forget(&NumberOrString::Number(1));
    server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"late\"}]}}\n")
        .await
        .unwrap();
    match next(&mut t).await {
        Some(JsonRpcMessage::Response(r)) => {
            assert!(matches!(r.result, ServerResult::CallToolResult(_)), "{r:?}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(t.pending().take(&NumberOrString::Number(1)), None);
    assert!(t.pending().all.is_empty());
}

#[tokio::test]
async fn a_line_that_is_not_json_is_skipped() {
    let (mut t, mut server, _sent) = pair();
    send(&mut t, 1, "tools/call").await;
    server
        .write_all(b"Server started on stdio\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n")
        .await
        .unwrap();
    match next(&mut t).await {
        Some(JsonRpcMessage::Response(r)) => assert_eq!(r.id, NumberOrString::Number(1)),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_malformed_answer_fails_the_call_it_names() {
    let (mut t, mut server, _sent) = pair();
    send(&mut t, 1, "tools/call").await;
    send(&mut t, 2, "tools/call").await;
    send(&mut t, 3, "tools/list").await;
    server
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"boom\"}\n\
              {\"jsonrpc\":\"2.0\",\"id\":\"2\"}\n\
              {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":7}}\n",
        )
        .await
        .unwrap();
    let (id, message) = error_of(next(&mut t).await);
    assert_eq!(id, NumberOrString::Number(1));
    assert!(
        message.contains("not a JSON-RPC error object") && message.contains("boom"),
        "{message}"
    );
    // A string id that reads as a number matches the number (as rmcp does).
    let (id, message) = error_of(next(&mut t).await);
    assert_eq!(id, NumberOrString::String("2".into()));
    assert!(
        message.contains("neither `result` nor `error`"),
        "{message}"
    );
    // Other answers are rmcp's to read: a listing of the wrong shape is its
    // catch-all (and `tools/list` then fails in rmcp, as before).
    match next(&mut t).await {
        Some(JsonRpcMessage::Response(r)) => {
            assert_eq!(r.id, NumberOrString::Number(3));
            assert!(matches!(r.result, ServerResult::CustomResult(_)), "{r:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_answer_nobody_waits_for_is_skipped_and_the_call_gets_its_own() {
    let (mut t, mut server, _sent) = pair();
    send(&mut t, 1, "tools/call").await;
    send(&mut t, 2, "tools/call").await;
    // The client cancelled call 2: its late answer is not for anyone.
    t.send(
        serde_json::from_value(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}))
            .unwrap(),
    )
    .await
    .unwrap();
    server
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{\"content\":[]}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\
              {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"one\"}]}}\n",
        )
        .await
        .unwrap();
    match next(&mut t).await {
        Some(JsonRpcMessage::Response(r)) => {
            assert_eq!(r.id, NumberOrString::Number(1));
            let ServerResult::CustomResult(v) = r.result else {
                panic!("typed")
            };
            assert_eq!(v.0, Value::Null);
            let filed = t.pending().take(&NumberOrString::Number(1)).unwrap();
            assert_eq!(filed.texts, ["one"]);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_oversized_message_fails_the_waiting_calls_and_reading_goes_on() {
    let (mut t, mut server, _sent) = pair();
    t.lines.set_max(1000);
    send(&mut t, 1, "tools/call").await;
    send(&mut t, 2, "tools/call").await;
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{}\"}}]}}}}\n",
        "x".repeat(5000)
    );
    let writer = tokio::spawn(async move {
        server.write_all(big.as_bytes()).await.unwrap();
        server
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n")
            .await
            .unwrap();
        server
    });
    let mut failed = vec![];
    for _ in 0..2 {
        let (id, message) = error_of(next(&mut t).await);
        assert!(message.contains("over 1000 bytes (the limit)"), "{message}");
        failed.push(id);
    }
    failed.sort_by_key(|id| id.to_string());
    assert_eq!(
        failed,
        [NumberOrString::Number(1), NumberOrString::Number(2)]
    );
    assert!(
        matches!(next(&mut t).await, Some(JsonRpcMessage::Notification(_))),
        "the next message is read"
    );
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn a_server_that_closes_mid_answer_ends_the_session() {
    let (mut t, mut server, _sent) = pair();
    send(&mut t, 1, "tools/call").await;
    server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"con")
        .await
        .unwrap();
    drop(server);
    assert!(next(&mut t).await.is_none());
}

#[tokio::test]
async fn sending_after_close_is_an_error() {
    let (mut t, _server, _sent) = pair();
    t.close().await.unwrap();
    let e = t.send(request(1, "tools/call")).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotConnected);
}

#[tokio::test]
async fn a_request_from_the_server_that_cannot_be_read_is_answered() {
    let (mut t, mut server, mut sent) = pair();
    server
        .write_all(b"{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n")
        .await
        .unwrap();
    assert!(
        matches!(next(&mut t).await, Some(JsonRpcMessage::Notification(_))),
        "the next message is read"
    );
    let mut buf = vec![0; 4096];
    let n = tokio::time::timeout(std::time::Duration::from_secs(5), sent.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let reply: Value = serde_json::from_slice(&buf[..n]).unwrap();
    assert_eq!(reply["id"], 5, "{reply}");
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
}

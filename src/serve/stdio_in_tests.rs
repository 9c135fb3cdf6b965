use super::*;
use rmcp::model::GetMeta;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What the service gets from a request: id, method, params as JSON (with
/// `_meta` from the extensions, as rmcp writes it), the typed params' own
/// `meta`, and the progress token.
fn seen(m: &RxJsonRpcMessage<RoleServer>) -> (Value, String) {
    let value = serde_json::to_value(m).unwrap();
    let detail = match m {
        JsonRpcMessage::Request(r) => {
            let typed = match &r.request {
                ClientRequest::CallToolRequest(c) => format!("{:?}", c.params),
                other => format!("other: {}", other.method()),
            };
            let mut request = r.request.clone();
            let token = request.get_meta_mut().get_progress_token();
            format!("{:?} {typed} {token:?}", r.id)
        }
        _ => "not a request".to_string(),
    };
    (value, detail)
}

fn by_rmcp(line: &str) -> Decoded {
    decode_with_rmcp(&mut JsonRpcMessageCodec::default(), line.as_bytes())
}

#[test]
fn a_tools_call_reads_exactly_as_rmcp_reads_it() {
    // Each of these is read by the direct path, and must be the message
    // rmcp's own decoder makes of it.
    let direct = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"path":"a"}}}"#,
        r#"{"params":{"arguments":{"path":"a"},"name":"read"},"method":"tools/call","id":"abc","jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":-7,"method":"tools/call","params":{"name":"x","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p1","other":[1,2]},"arguments":{"a":1.5e300,"b":-0.0,"c":12345678901234567890,"d":"\u00fc\ud83d\ude00\n","e":[[[{}]]],"f":null,"g":true}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"k":1,"k":2,"j":3}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":7}},"extra":{"ignored":true}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","requestState":"s","inputResponses":{"a":{"action":"accept","content":{"v":1}}}}}"#,
        r#"  {"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"tools/call"}}  "#,
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":null,"arguments":null,"requestState":null,"other":{"a":[1]}}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"\u0078","_meta":{}}}"#,
    ];
    for line in direct {
        let fast = decode_call(line.as_bytes()).unwrap_or_else(|| panic!("not direct: {line}"));
        let Decoded::Message(slow) = by_rmcp(line) else {
            panic!("rmcp does not read {line}")
        };
        assert_eq!(seen(&fast), seen(&slow), "{line}");
        assert!(seen(&fast).1.contains("CallToolRequestParams"), "{line}");
    }
    // These are left to rmcp's decoder (whatever it makes of them).
    let left = [
        // wrong shape: a result or error next to method and id
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"error":{}}"#,
        // params rmcp reads as some other request (or rejects)
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":5}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read","arguments":"no"}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":null}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","_meta":5}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","inputResponses":5}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","name":"y"}}"#,
        // envelope faults
        r#"{"id":1,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
        // another method that mentions tools/call
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/callx","params":{"name":"x"}}"#,
        // not JSON, or trailing garbage
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}} x"#,
        r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]"#,
        "tools/call",
    ];
    for line in left {
        assert!(
            decode_call(line.as_bytes()).is_none(),
            "read directly: {line}"
        );
    }
    // And what rmcp makes of a few of them, as the transport answers it.
    assert!(matches!(by_rmcp(left[0]), Decoded::Invalid));
    let trailing = left.iter().find(|l| l.ends_with(" x")).unwrap();
    assert!(matches!(by_rmcp(trailing), Decoded::Skip));
    let batch = left.iter().find(|l| l.starts_with('[')).unwrap();
    assert!(matches!(by_rmcp(batch), Decoded::Invalid));
    // Too deep for the parser in both: dropped without an answer.
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"read","arguments":{{"path":{}{}}}}}}}"#,
        "[".repeat(300),
        "]".repeat(300)
    );
    assert!(decode_call(deep.as_bytes()).is_none());
    assert!(matches!(by_rmcp(&deep), Decoded::Skip));
}

/// A transport over an in-memory pipe, with a small line limit; returns
/// the client's ends (what it writes, what it reads).
fn transport(
    max_line: usize,
) -> (
    StdioServerTransport<tokio::io::DuplexStream>,
    tokio::io::DuplexStream,
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<()>,
) {
    let (server_in, client_out) = tokio::io::duplex(1 << 16);
    let (server_out, client_in) = tokio::io::duplex(1 << 16);
    let (writer, task) = super::super::stdio_out::coalescing(server_out);
    let mut t = StdioServerTransport::new(server_in, writer);
    t.lines.set_max(max_line);
    (t, client_out, client_in, task)
}

fn id_of(m: &RxJsonRpcMessage<RoleServer>) -> Value {
    serde_json::to_value(m).unwrap()["id"].clone()
}

#[tokio::test]
async fn lines_are_read_skipped_and_answered_as_rmcp_does() {
    let (mut t, mut to_server, mut from_server, task) = transport(200);
    let call = |id: u32| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"x"}}}}"#)
    };
    let mut input = String::new();
    input += &call(1);
    input += "\r\n\n";
    input += "\u{feff}";
    input += &call(2);
    input += "\n";
    input += "garbage{\n";
    input += &format!("{}\n", "x".repeat(500));
    input += "[1, 2]\n";
    input += r#"{"jsonrpc":"2.0","method":"notifications/not-standard"}"#;
    input += "\n";
    input += r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    input += "\n";
    input += &call(4);
    input += "\n";
    input += r#"{"jsonrpc":"2.0","id":5,"method":"tools/call""#;
    to_server.write_all(input.as_bytes()).await.unwrap();
    drop(to_server);

    let mut ids = Vec::new();
    while let Some(m) = t.receive().await {
        ids.push(id_of(&m));
    }
    // Blank lines, non-JSON, the over-long line and the unfinished last
    // line are skipped; the unknown notification reaches the service (as
    // rmcp's custom notification, without an id).
    assert_eq!(
        ids,
        vec![json!(1), json!(2), Value::Null, json!(3), json!(4)]
    );
    // `[1, 2]` got rmcp's answer: Invalid request, without an id.
    t.close().await.unwrap();
    task.await.unwrap();
    let mut out = String::new();
    from_server.read_to_string(&mut out).await.unwrap();
    let answers: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 1, "{out}");
    assert_eq!(answers[0]["error"]["code"], -32600);
    assert_eq!(answers[0]["error"]["message"], "Invalid request");
    assert!(answers[0].get("id").is_none());
}

#[tokio::test]
async fn answers_go_out_one_per_line_in_order_and_fail_once_closed() {
    let (mut t, _to_server, mut from_server, task) = transport(MAX_LINE);
    let mut sends = Vec::new();
    for i in 0..50 {
        let m = TxJsonRpcMessage::<RoleServer>::error(
            ErrorData::invalid_params(format!("n{i}"), None),
            Some(RequestId::Number(i)),
        );
        sends.push(t.send(m));
    }
    // Sent in the order of `send`, whatever order the futures run in.
    for s in sends.into_iter().rev() {
        s.await.unwrap();
    }
    t.close().await.unwrap();
    let late = t.send(TxJsonRpcMessage::<RoleServer>::error(
        ErrorData::invalid_params("late", None),
        None,
    ));
    assert_eq!(
        late.await.unwrap_err().kind(),
        std::io::ErrorKind::NotConnected
    );
    task.await.unwrap();
    let mut out = String::new();
    from_server.read_to_string(&mut out).await.unwrap();
    let ids: Vec<i64> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ids, (0..50).collect::<Vec<_>>());
}

#[tokio::test]
async fn requests_in_flight_are_tracked_until_answered_or_cancelled() {
    let (mut t, mut to_server, _from_server, _task) = transport(MAX_LINE);
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":"b","method":"tools/list"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#,
        "\n",
    );
    to_server.write_all(input.as_bytes()).await.unwrap();
    for _ in 0..4 {
        t.receive().await.unwrap();
    }
    let ids = |t: &StdioServerTransport<_>| {
        let mut v: Vec<String> = t.in_flight.iter().map(|i| i.to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(ids(&t), vec!["1", "b"]);
    let answer = |id: RequestId| {
        TxJsonRpcMessage::<RoleServer>::error(ErrorData::invalid_params("x", None), Some(id))
    };
    t.send(answer(RequestId::Number(1))).await.unwrap();
    assert_eq!(ids(&t), vec!["b"]);
    t.send(answer(RequestId::String("b".into()))).await.unwrap();
    assert!(ids(&t).is_empty());
}

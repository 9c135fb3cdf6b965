//! A `tools/call` request line written straight from rmcp's typed request,
//! byte for byte what rmcp's `Serialize` writes for it.
//!
//! rmcp serializes a request through a generic proxy: the params are first
//! turned into a `serde_json::Value` (an `IndexMap` whose every key is
//! hashed with SipHash), `_meta` is taken out of it and merged with the one
//! in the request's extensions, and the map is written again. For the
//! `tools/call` requests toolgate forwards — a name, arguments, and the
//! `_meta` rmcp's `Peer` put in the extensions (the progress token; in the
//! 2026 era also the protocol version, client info and capabilities) —
//! that comes down to writing the fields in order:
//!
//! `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"_meta":META,"name":NAME,"arguments":ARGS}}`
//!
//! with `_meta` and `arguments` left out when absent. A request with
//! anything else (params-level `_meta`, `inputResponses`, `requestState`,
//! a legacy `MetaObject` extension) returns `None` and goes through rmcp's
//! serializer; so does every other message. The tests compare both writers
//! on many requests.

use rmcp::model::{ClientRequest, JsonRpcMessage, MetaObject, RequestMetaObject};
use rmcp::service::{RoleClient, TxJsonRpcMessage};

/// `item` as one line (with its newline) when it is a plain `tools/call`
/// request; `None` for anything else (rmcp's serializer writes it then).
pub fn call_line(item: &TxJsonRpcMessage<RoleClient>) -> Option<Vec<u8>> {
    let JsonRpcMessage::Request(r) = item else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = &r.request else {
        return None;
    };
    let p = &call.params;
    if p.meta.is_some()
        || p.input_responses.is_some()
        || p.request_state.is_some()
        || call.extensions.get::<MetaObject>().is_some()
    {
        return None;
    }
    let meta = call.extensions.get::<RequestMetaObject>().map(|m| &m.0 .0);
    let mut out =
        Vec::with_capacity(128 + p.name.len() + p.arguments.as_ref().map_or(0, |a| 32 * a.len()));
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    serde_json::to_writer(&mut out, &r.id).ok()?;
    out.extend_from_slice(br#","method":"tools/call","params":{"#);
    if let Some(meta) = meta {
        out.extend_from_slice(br#""_meta":"#);
        serde_json::to_writer(&mut out, meta).ok()?;
        out.push(b',');
    }
    out.extend_from_slice(br#""name":"#);
    serde_json::to_writer(&mut out, &*p.name).ok()?;
    if let Some(args) = &p.arguments {
        out.extend_from_slice(br#","arguments":"#);
        serde_json::to_writer(&mut out, args).ok()?;
    }
    out.extend_from_slice(b"}}\n");
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientCapabilities, Implementation,
        ListToolsRequest, NumberOrString, ProgressToken, ProtocolVersion, RequestId,
    };
    use serde_json::{json, Value};

    /// What rmcp's own serializer writes for `item`.
    fn rmcp_line(item: &TxJsonRpcMessage<RoleClient>) -> Vec<u8> {
        let mut b = serde_json::to_vec(item).unwrap();
        b.push(b'\n');
        b
    }

    fn call(
        id: RequestId,
        name: &str,
        args: Option<Value>,
        meta: Option<RequestMetaObject>,
    ) -> TxJsonRpcMessage<RoleClient> {
        let mut params = CallToolRequestParams::new(name.to_string());
        params.arguments = args.map(|a| match a {
            Value::Object(m) => m,
            _ => unreachable!(),
        });
        let mut request = CallToolRequest::new(params);
        if let Some(meta) = meta {
            request.extensions.insert(meta);
        }
        JsonRpcMessage::request(ClientRequest::CallToolRequest(request), id)
    }

    fn meta_2025(token: i64) -> RequestMetaObject {
        let mut m = RequestMetaObject::new();
        m.set_progress_token(ProgressToken(NumberOrString::Number(token)));
        m
    }

    /// The `_meta` rmcp's `Peer` writes in the 2026 era, in its order.
    fn meta_2026(token: &str) -> RequestMetaObject {
        let mut m = RequestMetaObject::new();
        m.set_protocol_version(ProtocolVersion::LATEST);
        m.set_client_info(Implementation::new("toolgate", "1.2.3"));
        m.set_client_capabilities(ClientCapabilities::default());
        m.set_progress_token(ProgressToken(NumberOrString::String(token.into())));
        m
    }

    #[test]
    fn a_plain_call_is_written_as_rmcp_writes_it() {
        let args = [
            None,
            Some(json!({})),
            Some(json!({"text": "hello"})),
            Some(
                json!({"z": 1, "a": [1.5, -0.0, 1e300, 12345678901234567890u64, null, true],
                "nested": {"b": "\"quoted\"\n\t\u{1}é😀", "a": {}}, "": ""}),
            ),
            Some(json!({"path": "/tmp/x y", "n": -7, "f": 0.1})),
        ];
        let metas = [
            None,
            Some(RequestMetaObject::new()),
            Some(meta_2025(0)),
            Some(meta_2025(i64::MAX)),
            Some(meta_2026("tok \"1\"")),
        ];
        let ids = [
            RequestId::Number(0),
            RequestId::Number(-3),
            RequestId::Number(4_000_000_000),
            RequestId::String("a\"b\\c".into()),
        ];
        let mut n = 0;
        for id in &ids {
            for name in ["echo", "a \"tool\"\u{7f}ü", ""] {
                for a in &args {
                    for m in &metas {
                        let item = call(id.clone(), name, a.clone(), m.clone());
                        let fast = call_line(&item).expect("a plain call takes the fast path");
                        assert_eq!(
                            String::from_utf8(fast).unwrap(),
                            String::from_utf8(rmcp_line(&item)).unwrap()
                        );
                        n += 1;
                    }
                }
            }
        }
        assert_eq!(n, 4 * 3 * 5 * 5);
    }

    #[test]
    fn anything_else_goes_through_rmcp() {
        // params-level _meta, request state, input responses, legacy meta
        let mut with_params_meta = CallToolRequestParams::new("echo");
        with_params_meta.meta = Some(meta_2025(1));
        let mut with_state = CallToolRequestParams::new("echo");
        with_state.request_state = Some("s".into());
        let with_responses: CallToolRequestParams = serde_json::from_value(
            json!({"name": "echo", "inputResponses": {"k": {"action": "cancel"}}}),
        )
        .unwrap();
        assert!(with_responses.input_responses.is_some());
        let mut legacy = CallToolRequest::new(CallToolRequestParams::new("echo"));
        legacy
            .extensions
            .insert(MetaObject(json!({"x": 1}).as_object().unwrap().clone()));
        for request in [
            CallToolRequest::new(with_params_meta),
            CallToolRequest::new(with_state),
            CallToolRequest::new(with_responses),
            legacy,
        ] {
            let item = JsonRpcMessage::request(
                ClientRequest::CallToolRequest(request),
                RequestId::Number(1),
            );
            assert!(call_line(&item).is_none(), "{item:?}");
        }
        let list = JsonRpcMessage::request(
            ClientRequest::ListToolsRequest(ListToolsRequest::default()),
            RequestId::Number(2),
        );
        assert!(call_line(&list).is_none());
    }
}

//! Redaction of what an upstream server sends besides tool results:
//! resource contents (`resources/read`), prompt messages (`prompts/get`),
//! completion values and log records. The same redactor as tool output
//! ([`super::redact_value`]) reaches every string; a `blob` whose bytes are
//! UTF-8 text is decoded, redacted as text and encoded again (binary blobs
//! pass unchanged: the redactor's rules are about text).

use base64::Engine;
use serde_json::Value;

use crate::policy::Policy;

/// Redacts `value` (any JSON an upstream answered) in place.
pub fn redact_passthrough(policy: &Policy, value: &mut Value) {
    let redactor = policy.redactor.get();
    let mut blobs = Vec::new();
    take_blobs(value, String::new(), &mut blobs);
    super::redact_value(redactor, value);
    let b64 = base64::engine::general_purpose::STANDARD;
    for (pointer, blob) in blobs {
        let blob = match b64.decode(blob.as_bytes()).map(String::from_utf8) {
            Ok(Ok(text)) => match redactor.redact(&text) {
                std::borrow::Cow::Owned(clean) => b64.encode(clean),
                std::borrow::Cow::Borrowed(_) => blob,
            },
            // Not base64 or not text: left as it came.
            _ => blob,
        };
        // The pointer only goes through schema keys (`contents`, `resource`,
        // indexes), which redaction does not change; if it did, the blob
        // is left out rather than shown unredacted.
        if let Some(Value::Object(map)) = value.pointer_mut(&pointer) {
            map.insert("blob".to_string(), Value::String(blob));
        }
    }
}

/// Removes every string `blob` field, remembering where it was.
fn take_blobs(value: &mut Value, pointer: String, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(blob)) = map.remove("blob") {
                out.push((pointer.clone(), blob));
            }
            for (key, v) in map.iter_mut() {
                let escaped = key.replace('~', "~0").replace('/', "~1");
                take_blobs(v, format!("{pointer}/{escaped}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                take_blobs(v, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

    fn policy() -> Policy {
        crate::load_policy(&Default::default(), &Default::default()).unwrap()
    }

    #[test]
    fn text_and_text_blobs_are_redacted_binary_blobs_kept() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let binary = b64.encode([0xff_u8, 0xfe, 0x00, 0x81]);
        let mut v = json!({"contents": [
            {"uri": "demo://a", "text": format!("token {SECRET}")},
            {"uri": "demo://b", "blob": b64.encode(format!("key={SECRET}\n"))},
            {"uri": "demo://c", "blob": binary.clone(), "mimeType": "image/png"},
            {"uri": "demo://d", "blob": b64.encode("plain")},
        ]});
        redact_passthrough(&policy(), &mut v);
        let c = &v["contents"];
        assert_eq!(c[0]["text"], "token [REDACTED:github-pat]");
        let b = b64.decode(c[1]["blob"].as_str().unwrap()).unwrap();
        assert_eq!(String::from_utf8(b).unwrap(), "key=[REDACTED:github-pat]\n");
        assert_eq!(c[2]["blob"], binary);
        assert_eq!(c[3]["blob"], b64.encode("plain"));
        assert_eq!(c[3]["uri"], "demo://d");
    }
}

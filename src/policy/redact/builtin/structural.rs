//! Formats recognised by their structure rather than a provider prefix:
//! private-key blocks, JWTs, assignments to secret-sounding names, and
//! passwords in connection strings.

use super::{allow, block, spec};
use crate::policy::redact::{Continuation, RedactRuleSpec};

/// gitleaks' global allowlist regexes (8.30.1), in Rust syntax: values that
/// are placeholders, template variables or paths, not secrets.
const PLACEHOLDERS: &[&str] = &[
    r"(?i)^(?:true|false|null)$",
    r"^(?i:a+|b+|c+|d+|e+|f+|g+|h+|i+|j+|k+|l+|m+|n+|o+|p+|q+|r+|s+|t+|u+|v+|w+|x+|y+|z+|\*+|\.+)$",
    r"^\$(?:\d+|\{\d+\})$",
    r"^\$(?:[A-Z_]+|[a-z_]+)$",
    r"^\$\{(?:[A-Z_]+|[a-z_]+)\}$",
    r"^\{\{[ \t]*[\w ().|]+[ \t]*\}\}$",
    r"^%(?:[A-Z_]+|[a-z_]+)%$",
    r"^@(?:[A-Z_]+|[a-z_]+)@$",
    r"^/Users/(?i)[a-z0-9]+/[\w .-/]+$",
    r"^/(?:bin|etc|home|opt|tmp|usr|var)/[\w ./-]+$",
];

pub(super) fn rules() -> Vec<RedactRuleSpec> {
    vec![
        // The BEGIN line opens the block; the body goes piece by piece (a line
        // break with what follows, up to 256 characters of base64 or a
        // `Header: value` line) until the END line or anything else. So a
        // block of any length is redacted in constant memory, and a block cut
        // short (a `read` with a line limit) still loses what is left of it.
        // `\n` escapes count as line breaks (a key inside a JSON string).
        block(
            "private-key",
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
            &["private key"],
            Continuation {
                piece: r"(?:\r?\n|(?:\\r)?\\n)[ \t]{0,16}(?:[A-Za-z0-9+/=]{1,256}|[A-Za-z][A-Za-z0-9-]{0,63}:[^\r\n\\]{0,256})?|[A-Za-z0-9+/=]{1,256}".to_string(),
                footer: r"(?:\r?\n|(?:\\r)?\\n)?[ \t]{0,16}-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----".to_string(),
            },
        ),
        // Header and payload are base64 of a JSON object, so both start `eyJ`.
        spec(
            "jwt",
            r"\beyJ[A-Za-z0-9_-]{10,512}\.eyJ[A-Za-z0-9_-]{10,2048}\.[A-Za-z0-9_-]{10,1024}={0,2}",
            &["eyj"],
            0,
        ),
        // The value must end at a delimiter, so code such as
        // `password = getpass.getpass()` or `secret = cfg["x"]` is not taken for
        // a secret; a value starting with `$`, `{`, `<`, `%` is a placeholder.
        // A `:` counts only before a space or quote (YAML, JSON), because in a
        // URL `user:password@` it would swallow the host as well.
        // Placeholders are not secrets: gitleaks' global allowlist (8.30.1)
        // drops `xxxxxxxx`, `********`, `$VAR`, `${VAR}`, `{{ var }}`,
        // `%VAR%`, `true`/`false`/`null` and paths, and so does this rule.
        RedactRuleSpec {
            allowlists: vec![allow(PLACEHOLDERS)],
            ..spec(
            "generic-secret",
            r#"(?i)(?:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|access[_-]?token|auth[_-]?token)(?:\\?["'])?[ \t]{0,8}(?:(?::=|=>|=)[ \t]{0,8}(?:\\?["'`])?|:[ \t]{0,8}\\?["'`]|:[ \t]{1,8})([^\s"'`,;&\\()\[\]{}<>$%][^\s"'`,;&\\()\[\]{}<>]{7,255})(?:[\s"'`,;&\\)\]}]|$)"#,
            &[
                "passw",
                "passphrase",
                "secret",
                "api_key",
                "api-key",
                "apikey",
                "token",
            ],
            1,
        )
        },
        // Any scheme: database URLs, but also `https://user:token@host` git remotes.
        spec(
            "connection-string-password",
            r#"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:@/?#"'<>]{0,128}:([^\s@/?#"'<>]{1,256})@[A-Za-z0-9\[_-]"#,
            &["://"],
            1,
        ),
    ]
}

//! The built-in rule table that `defaults: true` turns on.

use super::RedactRuleSpec;

pub(super) fn spec(
    id: &str,
    regex: &str,
    keywords: &[&str],
    secret_group: usize,
) -> RedactRuleSpec {
    RedactRuleSpec {
        id: id.to_string(),
        regex: regex.to_string(),
        keywords: keywords.iter().map(|k| k.to_string()).collect(),
        secret_group,
    }
}

/// The built-in rules that `defaults: true` turns on.
///
/// Specific formats come first so that, where a generic rule (an assignment,
/// a URL password) finds the same secret, the specific id labels it.
pub fn default_rules() -> Vec<RedactRuleSpec> {
    vec![
        spec(
            "aws-access-key-id",
            r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
            &["akia", "asia", "abia", "acca"],
            0,
        ),
        // A bare 40-character base64 string is far too common to redact on its
        // own; the secret key is only recognisable by the name it is assigned to.
        spec(
            "aws-secret-access-key",
            r#"(?i)(?:secret_access_key|secretaccesskey)["']?\s*(?::=|=>|=|:)\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
            &["secret_access_key", "secretaccesskey"],
            1,
        ),
        spec("github-pat", r"\bghp_[A-Za-z0-9]{36}\b", &["ghp_"], 0),
        spec("github-oauth", r"\bgho_[A-Za-z0-9]{36}\b", &["gho_"], 0),
        spec(
            "github-app-token",
            r"\b(?:ghu|ghs)_[A-Za-z0-9]{36}\b",
            &["ghu_", "ghs_"],
            0,
        ),
        spec(
            "github-refresh-token",
            r"\bghr_[A-Za-z0-9]{36}\b",
            &["ghr_"],
            0,
        ),
        spec(
            "github-fine-grained-pat",
            r"\bgithub_pat_[A-Za-z0-9_]{82}\b",
            &["github_pat_"],
            0,
        ),
        // Legacy tokens are 20 characters; newer routable ones are longer and
        // carry dot-separated suffixes, which belong to the secret too.
        spec(
            "gitlab-pat",
            r"\bglpat-[A-Za-z0-9_-]{20,300}(?:\.[A-Za-z0-9_-]+)*",
            &["glpat-"],
            0,
        ),
        spec(
            "slack-bot-token",
            r"\bxoxb-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9-]{20,}",
            &["xoxb-"],
            0,
        ),
        spec(
            "slack-user-token",
            r"\bxox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9]{28,34}\b",
            &["xoxp-", "xoxe-"],
            0,
        ),
        spec(
            "slack-legacy-token",
            r"\bxox[ar]-(?:[0-9]-)?[A-Za-z0-9]{8,48}\b",
            &["xoxa-", "xoxr-"],
            0,
        ),
        spec(
            "slack-webhook-url",
            r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,120}",
            &["hooks.slack.com"],
            0,
        ),
        spec(
            "stripe-secret-key",
            r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}\b",
            &["sk_live_", "rk_live_", "sk_test_", "rk_test_"],
            0,
        ),
        // `T3BlbkFJ` is base64 for "OpenAI"; older keys carry it at a fixed place.
        spec(
            "openai-api-key",
            r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,250}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}\b)",
            &["sk-proj-", "sk-svcacct-", "sk-admin-", "t3blbkfj"],
            0,
        ),
        // The key can end in `-`, where `\b` fails; the trailing class plays its role.
        spec(
            "anthropic-api-key",
            r"\b(sk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{80,120})(?:[^A-Za-z0-9_-]|$)",
            &["sk-ant-"],
            1,
        ),
        spec(
            "google-api-key",
            r"\b(AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)",
            &["aiza"],
            1,
        ),
        spec("npm-access-token", r"\bnpm_[A-Za-z0-9]{36}\b", &["npm_"], 0),
        // The fixed part is base64 of the macaroon header naming pypi.org
        // (or test.pypi.org).
        spec(
            "pypi-upload-token",
            r"\bpypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,1000}",
            &["pypi-ageichlwas5vcmc", "pypi-agendgvzdc5wexbplm9yzw"],
            0,
        ),
        // The second alternative covers a block cut short (a `read` with a line
        // limit): the headers and base64 lines that are left still go.
        spec(
            "private-key",
            r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|(?:\r?\n[ \t]*[A-Za-z-]+:[^\r\n]*)*(?:[A-Za-z0-9+/=\\]|\r?\n[ \t]*)*)",
            &["private key"],
            0,
        ),
        // Header and payload are base64 of a JSON object, so both start `eyJ`.
        spec(
            "jwt",
            r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}={0,2}",
            &["eyj"],
            0,
        ),
        spec("twilio-api-key", r"\bSK[0-9a-fA-F]{32}\b", &["sk"], 0),
        spec(
            "sendgrid-api-key",
            r"\b(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
            &["sg."],
            1,
        ),
        spec(
            "huggingface-access-token",
            r"\bhf_[A-Za-z]{34}\b",
            &["hf_"],
            0,
        ),
        // No fixed literal: the first part is the base64 of a numeric user id,
        // which starts with M, N or O. The exact part lengths keep it precise.
        spec(
            "discord-bot-token",
            r"\b([MNO][A-Za-z0-9]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?:[^A-Za-z0-9_-]|$)",
            &[],
            1,
        ),
        spec(
            "azure-storage-account-key",
            r"(?i:accountkey)\s*=\s*([A-Za-z0-9+/]{86}==)",
            &["accountkey"],
            1,
        ),
        // A Heroku API key is a bare UUID, so only its name makes it a secret.
        spec(
            "heroku-api-key",
            r#"(?i)heroku[A-Za-z0-9_.-]{0,20}["']?\s*(?::=|=>|=|:)\s*["']?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"#,
            &["heroku"],
            1,
        ),
        // The value must end at a delimiter, so code such as
        // `password = getpass.getpass()` or `secret = cfg["x"]` is not taken for
        // a secret; a value starting with `$`, `{`, `<`, `%` is a placeholder.
        // A `:` counts only before a space or quote (YAML, JSON), because in a
        // URL `user:password@` it would swallow the host as well.
        spec(
            "generic-secret",
            r#"(?i)(?:password|passwd|passphrase|secret|secret[_-]?key|api[_-]?key|access[_-]?token|auth[_-]?token)(?:\\?["'])?\s*(?:(?::=|=>|=)\s*(?:\\?["'`])?|:\s*\\?["'`]|:\s+)([^\s"'`,;&\\()\[\]{}<>$%][^\s"'`,;&\\()\[\]{}<>]{7,})(?:[\s"'`,;&\\)\]}]|$)"#,
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
        ),
        // Any scheme: database URLs, but also `https://user:token@host` git remotes.
        spec(
            "connection-string-password",
            r#"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:@/?#"'<>]*:([^\s@/?#"'<>]+)@[A-Za-z0-9\[_-]"#,
            &["://"],
            1,
        ),
    ]
}

//! Tests for each built-in rule in `default_rules()`.

use super::*;

/// Rules with hand-written tests below; the rest are in `generated.rs`.
const TESTED_RULES: &[&str] = &[
    "aws-access-key-id",
    "aws-secret-access-key",
    "google-api-key",
    "azure-storage-account-key",
    "azure-sas-token",
    "heroku-api-key",
    "github-pat",
    "github-oauth",
    "github-app-token",
    "github-refresh-token",
    "github-fine-grained-pat",
    "gitlab-pat",
    "slack-bot-token",
    "slack-user-token",
    "slack-legacy-token",
    "slack-webhook-url",
    "discord-bot-token",
    "discord-webhook-url",
    "stripe-secret-key",
    "openai-api-key",
    "anthropic-api-key",
    "huggingface-access-token",
    "npm-access-token",
    "pypi-upload-token",
    "sendgrid-api-key",
    "twilio-api-key",
    "private-key",
    "jwt",
    "generic-secret",
    "connection-string-password",
];

#[test]
fn every_built_in_rule_has_a_test() {
    let generated = super::generated::generated_ids();
    let ids: Vec<&str> = defaults().rule_ids().collect();
    assert!(ids.len() >= 40, "{} built-in rules", ids.len());
    for id in &ids {
        assert!(
            TESTED_RULES.contains(id) || generated.contains(id),
            "built-in rule {id} has no test"
        );
    }
    for r in default_rules() {
        assert!(
            !r.keywords.is_empty()
                || ["discord-bot-token", "twilio-api-key"].contains(&r.id.as_str()),
            "{}",
            r.id
        );
        assert!(
            r.keywords
                .iter()
                .all(|k| *k == k.to_lowercase() && k.len() >= 3),
            "{}: keywords are lower case and three bytes or more, so the sieve works",
            r.id
        );
        // Bounded by the pattern itself, not only by the cap on repetitions.
        let ascii = crate::policy::redact::syntax::ascii_perl_classes(&r.regex).unwrap();
        let hir = regex_syntax::parse(&ascii).unwrap();
        assert!(
            hir.properties().maximum_len().is_some(),
            "{}: unbounded repetition",
            r.id
        );
    }
}

#[test]
fn azure_sas_token_and_discord_webhook() {
    let sig = format!("{}%3D", gen(ALNUM, 43, 3));
    let before = "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=";
    assert_redacts("azure-sas-token", before, &sig, "&se=x");
    assert_untouched(&format!(
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sag={sig}"
    ));
    let hook = gen(URLSAFE, 68, 2);
    let url = "https://discord.com/api/webhooks/123456789012345678/";
    assert_redacts("discord-webhook-url", url, &hook, "\n");
    assert_untouched(&format!(
        "https://example.com/api/webhooks/123456789012345678/{hook}"
    ));
}

#[test]
fn aws_access_key_id() {
    let body = gen(UPPER_B32, 16, 3);
    assert_redacts("aws-access-key-id", "key: ", &format!("AKIA{body}"), " ok");
    assert_redacts("aws-access-key-id", "(", &format!("ASIA{body}"), ")");
    assert_untouched(&format!("key: AKIA{}", &body[..15]));
    assert_untouched(&format!("key: AKIA{body}X"));
    assert_untouched(&format!("key: AKIB{body}"));
    assert_untouched(&format!("key: AKIA{}", body.to_lowercase()));
}

#[test]
fn aws_secret_access_key() {
    let secret = gen(B64, 40, 5);
    assert_redacts(
        "aws-secret-access-key",
        "aws_secret_access_key = ",
        &secret,
        "\nregion = us-east-1",
    );
    assert_redacts(
        "aws-secret-access-key",
        "export AWS_SECRET_ACCESS_KEY=\"",
        &secret,
        "\"",
    );
    assert_redacts(
        "aws-secret-access-key",
        "{\"SecretAccessKey\": \"",
        &secret,
        "\"}",
    );
    // Without the name it is just a 40-character string.
    assert_untouched(&format!("checksum {secret}"));
    assert_untouched(&format!("aws_secret_access_key = {}", &secret[..39]));
    assert_untouched(&format!("aws_secret_access_key = {secret}A"));
}

fn github_case(id: &str, prefix: &str) {
    let body = gen(ALNUM, 36, prefix.len() + 11);
    assert_redacts(id, "token ", &format!("{prefix}{body}"), " end");
    assert_untouched(&format!("token {prefix}{}", &body[..35]));
    assert_untouched(&format!("token {prefix}{body}a"));
    assert_untouched(&format!("token ghx_{body}"));
}

#[test]
fn github_tokens() {
    github_case("github-pat", "ghp_");
    github_case("github-oauth", "gho_");
    github_case("github-app-token", "ghu_");
    github_case("github-app-token", "ghs_");
    github_case("github-refresh-token", "ghr_");
}

#[test]
fn github_fine_grained_pat() {
    let token = format!("github_pat_{}_{}", gen(ALNUM, 22, 1), gen(ALNUM, 59, 2));
    assert_redacts("github-fine-grained-pat", "GH_TOKEN=", &token, "\n");
    assert_untouched(&format!("GH_TOKEN={}", &token[..token.len() - 1]));
    assert_untouched(&format!(
        "GH_TOKEN={}",
        token.replace("github_pat_", "github_pet_")
    ));
}

#[test]
fn gitlab_pat() {
    let body = gen(URLSAFE, 20, 4);
    assert_redacts(
        "gitlab-pat",
        "PRIVATE-TOKEN: ",
        &format!("glpat-{body}"),
        ". Done",
    );
    let routable = format!("glpat-{}.01.{}", gen(URLSAFE, 27, 6), gen(HEX, 9, 1));
    assert_redacts("gitlab-pat", "t=", &routable, " ");
    assert_untouched(&format!("PRIVATE-TOKEN: glpat-{}", &body[..19]));
    assert_untouched(&format!("PRIVATE-TOKEN: glpot-{body}"));
}

#[test]
fn slack_tokens() {
    let bot = format!(
        "xoxb-{}-{}-{}",
        gen(DIGITS, 11, 1),
        gen(DIGITS, 12, 2),
        gen(ALNUM, 24, 3)
    );
    assert_redacts("slack-bot-token", "SLACK_BOT_TOKEN=", &bot, "\n");
    assert_untouched(&format!(
        "xoxb-{}-{}",
        gen(DIGITS, 11, 1),
        gen(ALNUM, 24, 3)
    ));

    let user = format!(
        "xoxp-{}-{}-{}-{}",
        gen(DIGITS, 10, 1),
        gen(DIGITS, 11, 2),
        gen(DIGITS, 12, 3),
        gen(HEX, 32, 4)
    );
    assert_redacts("slack-user-token", "token: ", &user, "\n");
    assert_untouched(&format!(
        "token: xoxp-{}-{}-{}",
        gen(DIGITS, 10, 1),
        gen(DIGITS, 11, 2),
        gen(HEX, 32, 4)
    ));

    let legacy = format!("xoxr-{}", gen(ALNUM, 30, 5));
    assert_redacts("slack-legacy-token", "token: ", &legacy, " ");
    assert_redacts(
        "slack-legacy-token",
        "token: ",
        &format!("xoxa-2-{}", gen(ALNUM, 30, 5)),
        " ",
    );
    assert_untouched(&format!("token: xoxa-{}", gen(ALNUM, 7, 5)));
    assert_untouched(&format!("token: xoxz-{}", gen(ALNUM, 30, 5)));
}

#[test]
fn slack_webhook_url() {
    let path = format!(
        "T{}/B{}/{}",
        gen(UPPER_B32, 8, 1),
        gen(UPPER_B32, 8, 2),
        gen(ALNUM, 24, 3)
    );
    let url = format!("https://hooks.slack.com/services/{path}");
    assert_redacts("slack-webhook-url", "POST ", &url, " failed");
    assert_untouched("see https://hooks.slack.com/services/ for setup");
    assert_untouched(&format!(
        "https://hooks.slack.com/services/T{}",
        gen(UPPER_B32, 8, 1)
    ));
    assert_untouched(&format!("https://hooks.example.com/services/{path}"));
}

#[test]
fn stripe_secret_key() {
    let body = gen(ALNUM, 24, 8);
    assert_redacts_assigned(
        "stripe-secret-key",
        "Stripe.api_key = '",
        &format!("sk_live_{body}"),
        "'",
    );
    assert_redacts(
        "stripe-secret-key",
        "key ",
        &format!("rk_live_{}", gen(ALNUM, 99, 1)),
        "\n",
    );
    assert_untouched(&format!("key sk_live_{}", &body[..23]));
    // Publishable keys are meant to be public.
    assert_untouched(&format!("key pk_live_{body}"));
}

#[test]
fn openai_api_key() {
    let proj = format!(
        "sk-proj-{}T3BlbkFJ{}",
        gen(URLSAFE, 74, 1),
        gen(URLSAFE, 74, 2)
    );
    assert_redacts_assigned("openai-api-key", "OPENAI_API_KEY=", &proj, "\n");
    let legacy = format!("sk-{}T3BlbkFJ{}", gen(ALNUM, 20, 3), gen(ALNUM, 20, 4));
    assert_redacts("openai-api-key", "key ", &legacy, " ");
    assert_untouched(&format!(
        "key sk-{}T3BlbkFJ{}",
        gen(ALNUM, 19, 3),
        gen(ALNUM, 20, 4)
    ));
    assert_untouched(&format!("key sk-{}", gen(ALNUM, 48, 3)));
    assert_untouched(&format!("branch sk-proj-{}", gen(ALNUM, 12, 3)));
}

#[test]
fn anthropic_api_key() {
    let key = format!("sk-ant-api03-{}AA", gen(URLSAFE, 93, 7));
    assert_redacts_assigned("anthropic-api-key", "ANTHROPIC_API_KEY=", &key, "\n");
    assert_redacts("anthropic-api-key", "", &key, "");
    assert_untouched(&format!("x sk-ant-api03-{}", gen(URLSAFE, 40, 7)));
    assert_untouched(&format!("x sk-ant-xyz03-{}AA", gen(URLSAFE, 93, 7)));
}

#[test]
fn google_api_key() {
    // Ends in `-`, where a plain `\b` would lose the last character.
    let key = format!("AIza{}-", gen(URLSAFE, 34, 9));
    assert_redacts("google-api-key", "?key=", &key, "&q=1");
    assert_untouched(&format!("?key=AIza{}", gen(URLSAFE, 34, 9)));
    assert_untouched(&format!("?key=AIza{}", gen(URLSAFE, 36, 9)));
    assert_untouched(&format!("?key=AIzb{}", gen(URLSAFE, 35, 9)));
}

#[test]
fn npm_access_token() {
    let body = gen(ALNUM, 36, 12);
    assert_redacts_assigned(
        "npm-access-token",
        "//registry.npmjs.org/:_authToken=",
        &format!("npm_{body}"),
        "\n",
    );
    assert_untouched(&format!("token npm_{}", &body[..35]));
    assert_untouched(&format!("run npm_{}", "config_cache"));
}

#[test]
fn pypi_upload_token() {
    let token = format!("pypi-AgEIcHlwaS5vcmc{}", gen(URLSAFE, 120, 2));
    assert_redacts_assigned("pypi-upload-token", "password = ", &token, "\n");
    assert_untouched(&format!("token pypi-AgEIcHlwaS5vcmc{}", gen(ALNUM, 20, 2)));
    assert_untouched(&format!("pkg pypi-AgEIcHlwaS5vcmX{}", gen(URLSAFE, 120, 2)));
}

fn pem_body() -> String {
    (0..4).map(|i| gen(B64, 64, i) + "\n").collect()
}

#[test]
fn private_key() {
    let block = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}-----END RSA PRIVATE KEY-----",
        pem_body()
    );
    assert_redacts("private-key", "id_rsa:\n", &block, "\nnext line");
    let plain = format!(
        "-----BEGIN PRIVATE KEY-----\n{}-----END PRIVATE KEY-----",
        pem_body()
    );
    assert_redacts("private-key", "", &plain, "\n");
    // JSON-escaped, as in a service-account file.
    let escaped = format!(
        "-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----",
        gen(B64, 64, 1)
    );
    assert_redacts("private-key", "{\"private_key\": \"", &escaped, "\\n\"}");
    // Cut short by a line limit: the key material still goes.
    let truncated = format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{}", pem_body());
    assert_redacts("private-key", "", &truncated, "[output truncated]");

    assert_untouched("-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----");
    assert_untouched("the private key is in the vault");
}

#[test]
fn two_private_keys_are_redacted_separately() {
    let block = format!(
        "-----BEGIN EC PRIVATE KEY-----\n{}-----END EC PRIVATE KEY-----",
        pem_body()
    );
    let text = format!("a\n{block}\nmiddle\n{block}\nz");
    assert_eq!(
        defaults().redact(&text),
        "a\n[REDACTED:private-key]\nmiddle\n[REDACTED:private-key]\nz"
    );
}

#[test]
fn jwt() {
    let token = format!(
        "eyJ{}.eyJ{}.{}",
        gen(URLSAFE, 30, 1),
        gen(URLSAFE, 60, 2),
        gen(URLSAFE, 43, 3)
    );
    assert_redacts("jwt", "Authorization: Bearer ", &token, "\r\n");
    assert_untouched(&format!(
        "eyJ{}.eyJ{}",
        gen(URLSAFE, 30, 1),
        gen(URLSAFE, 60, 2)
    ));
    assert_untouched(&format!(
        "eyJ{}.abc{}.{}",
        gen(URLSAFE, 30, 1),
        gen(URLSAFE, 60, 2),
        gen(URLSAFE, 43, 3)
    ));
}

#[test]
fn twilio_api_key() {
    let key = format!("SK{}", gen(HEX, 32, 5));
    assert_redacts_assigned("twilio-api-key", "TWILIO_API_KEY=", &key, "\n");
    assert_untouched(&format!("twilio key SK{}", gen(HEX, 31, 5)));
    assert_untouched(&format!("twilio key SK{}", gen(HEX, 33, 5)));
    assert_untouched(&format!("twilio key SK{}z", gen(HEX, 31, 5)));
    assert_untouched(&format!("id: AC{}", gen(HEX, 32, 5)));
}

#[test]
fn sendgrid_api_key() {
    let key = format!("SG.{}.{}", gen(URLSAFE, 22, 1), gen(URLSAFE, 43, 2));
    assert_redacts_assigned("sendgrid-api-key", "SENDGRID_API_KEY='", &key, "'");
    assert_untouched(&format!(
        "SG.{}.{}",
        gen(URLSAFE, 21, 1),
        gen(URLSAFE, 43, 2)
    ));
    assert_untouched(&format!(
        "SG.{}.{}",
        gen(URLSAFE, 22, 1),
        gen(URLSAFE, 44, 2)
    ));
}

#[test]
fn huggingface_access_token() {
    let token = format!("hf_{}", gen(LETTERS, 34, 6));
    assert_redacts("huggingface-access-token", "HF_TOKEN=", &token, "\n");
    assert_untouched(&format!("HF_TOKEN=hf_{}", gen(LETTERS, 33, 6)));
    assert_untouched(&format!("HF_TOKEN=hf_{}", gen(ALNUM, 34, 60)));
}

#[test]
fn discord_bot_token() {
    let token = format!(
        "MT{}.{}.{}",
        gen(ALNUM, 22, 1),
        gen(URLSAFE, 6, 2),
        gen(URLSAFE, 38, 3)
    );
    assert_redacts("discord-bot-token", "client.run(\"", &token, "\")");
    assert_untouched(&format!(
        "MT{}.{}.{}",
        gen(ALNUM, 22, 1),
        gen(URLSAFE, 5, 2),
        gen(URLSAFE, 38, 3)
    ));
    assert_untouched(&format!(
        "XT{}.{}.{}",
        gen(ALNUM, 22, 1),
        gen(URLSAFE, 6, 2),
        gen(URLSAFE, 38, 3)
    ));
    assert_untouched("MyApplicationConfigurationX.setter.withSomethingElseVeryLongName");
}

#[test]
fn azure_storage_account_key() {
    let key = format!("{}==", gen(B64, 86, 4));
    let before = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=";
    assert_redacts(
        "azure-storage-account-key",
        before,
        &key,
        ";EndpointSuffix=core.windows.net",
    );
    assert_untouched(&format!("AccountKey={}==", gen(B64, 60, 4)));
    assert_untouched(&format!("blob {key}"));
}

#[test]
fn heroku_api_key() {
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        gen(HEX, 8, 1),
        gen(HEX, 4, 2),
        gen(HEX, 4, 3),
        gen(HEX, 4, 4),
        gen(HEX, 12, 5)
    );
    assert_redacts_assigned("heroku-api-key", "HEROKU_API_KEY=", &uuid, "\n");
    assert_untouched(&format!("request_id={uuid}"));
    assert_untouched(&format!("heroku key {}", &uuid[..35]));
}

#[test]
fn generic_secret_keeps_context() {
    assert_redacts("generic-secret", "password=", "hunter2hunter2", "");
    assert_redacts("generic-secret", "DB_PASSWORD=", "c0rrect-h0rse", "\n");
    assert_redacts(
        "generic-secret",
        "{\"client_secret\": \"",
        "s3cr3t-value!",
        "\"}",
    );
    assert_redacts("generic-secret", "  api_key: '", "abcd1234efgh", "'\n");
    assert_redacts(
        "generic-secret",
        "https://x/?apikey=",
        "abcd1234efgh",
        "&page=2",
    );
    assert_redacts(
        "generic-secret",
        "pass := \"x\"\npassword := `",
        "abcd1234efgh",
        "`",
    );
    assert_redacts(
        "generic-secret",
        "{\\\"password\\\": \\\"",
        "abcd1234efgh",
        "\\\"}",
    );
    assert_redacts("generic-secret", "SECRET_KEY=", "pa$$word12", "");
}

#[test]
fn generic_secret_near_misses() {
    assert_untouched("password=hunter2");
    assert_untouched("password: 1234567");
    assert_untouched("password = getpass.getpass()");
    assert_untouched("secret = os.environ[\"SECRET\"]");
    assert_untouched("password=${DB_PASSWORD}");
    assert_untouched("password: <your-password-here>");
    assert_untouched("api_key = config.get(\"api_key\")");
    assert_untouched("the password is hunter2hunter2");
    assert_untouched("DB_PASSWORD_FILE=/run/secrets/db");
}

#[test]
fn connection_string_password() {
    assert_redacts(
        "connection-string-password",
        "DATABASE_URL=postgres://app:",
        "s3cretPass",
        "@db.internal:5432/app",
    );
    assert_redacts(
        "connection-string-password",
        "mongodb+srv://admin:",
        "x",
        "@cluster0.example.net/",
    );
    assert_redacts(
        "connection-string-password",
        "redis://:",
        "redispass99",
        "@localhost:6379/0",
    );
    assert_untouched("postgres://app@db.internal:5432/app");
    assert_untouched("http://localhost:8080/path");
    assert_untouched("ssh://git@github.com:22/org/repo.git");
}

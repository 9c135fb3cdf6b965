//! Payments (Stripe, Square, Shopify, Braintree), AI providers, package
//! registries, and other services (SendGrid, Twilio, Linear, New Relic).

use super::spec;
use crate::policy::redact::RedactRuleSpec;

pub(super) fn rules() -> Vec<RedactRuleSpec> {
    vec![
        // Publishable keys (`pk_`) are meant to be public and are left alone.
        spec(
            "stripe-secret-key",
            r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{24,247}\b",
            &["sk_live_", "rk_live_", "sk_test_", "rk_test_"],
            0,
        ),
        spec(
            "stripe-webhook-secret",
            r"\bwhsec_[A-Za-z0-9]{32,64}\b",
            &["whsec_"],
            0,
        ),
        spec(
            "square-access-token",
            r"\b(sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
            &["sq0atp-", "sq0csp-"],
            1,
        ),
        spec(
            "shopify-token",
            r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
            &["shpat_", "shpca_", "shppa_", "shpss_"],
            0,
        ),
        spec(
            "braintree-access-token",
            r"\baccess_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}\b",
            &["access_token$"],
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
            "huggingface-access-token",
            r"\bhf_[A-Za-z]{34}\b",
            &["hf_"],
            0,
        ),
        spec("groq-api-key", r"\bgsk_[A-Za-z0-9]{52}\b", &["gsk_"], 0),
        spec(
            "replicate-api-token",
            r"\br8_[A-Za-z0-9]{37}\b",
            &["r8_"],
            0,
        ),
        spec(
            "perplexity-api-key",
            r"\bpplx-[A-Za-z0-9]{48}\b",
            &["pplx-"],
            0,
        ),
        spec("xai-api-key", r"\bxai-[A-Za-z0-9]{80}\b", &["xai-"], 0),
        spec(
            "nvidia-api-key",
            r"\b(nvapi-[A-Za-z0-9_-]{64})(?:[^A-Za-z0-9_-]|$)",
            &["nvapi-"],
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
        spec(
            "crates-io-api-token",
            r"\bcio[A-Za-z0-9]{32}\b",
            &["cio"],
            0,
        ),
        spec(
            "rubygems-api-key",
            r"\brubygems_[a-f0-9]{48}\b",
            &["rubygems_"],
            0,
        ),
        spec(
            "docker-hub-pat",
            r"\b(dckr_pat_[A-Za-z0-9_-]{27})(?:[^A-Za-z0-9_-]|$)",
            &["dckr_pat_"],
            1,
        ),
        spec("nuget-api-key", r"\boy2[a-z0-9]{43}\b", &["oy2"], 0),
        spec(
            "sendgrid-api-key",
            r"\b(SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)",
            &["sg."],
            1,
        ),
        // `SK` is too short to be a useful keyword (it would wake the rule on
        // every "sk"); where the fingerprint runs, the rule runs only where
        // its class prefix (`S`, `K`, hex digits, case-sensitive) occurs.
        spec("twilio-api-key", r"\bSK[0-9a-fA-F]{32}\b", &[], 0),
        spec(
            "linear-api-key",
            r"\blin_api_[A-Za-z0-9]{40}\b",
            &["lin_api_"],
            0,
        ),
        spec(
            "new-relic-user-api-key",
            r"\bNRAK-[A-Z0-9]{27}\b",
            &["nrak-"],
            0,
        ),
    ]
}

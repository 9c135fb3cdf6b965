//! Cloud providers: AWS, Google Cloud, Azure, Alibaba, DigitalOcean, Heroku, Vault.

use super::{allow, spec};
use crate::policy::redact::RedactRuleSpec;

/// The public Google API keys gitleaks allowlists, without their `AIza`
/// prefix (whole keys in source would trip secret scanners on this file).
const GCP_PUBLIC_KEYS: [&str; 16] = [
    "Syabcdefghijklmnopqrstuvwxyz1234567",
    "SyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
    "SyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM",
    "SyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
    "SyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0",
    "yDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
    "SyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c",
    "SyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
    "SyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY",
    "SyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
    "SyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ",
    "SyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
    "SyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU",
    "SyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
    "SyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE",
    "SyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
];

pub(super) fn rules() -> Vec<RedactRuleSpec> {
    vec![
        // AWS documents its example keys with an `EXAMPLE` suffix; gitleaks
        // allowlists them, and so does this rule.
        RedactRuleSpec {
            allowlists: vec![allow(&[r".+EXAMPLE$"])],
            ..spec(
                "aws-access-key-id",
                r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
                &["akia", "asia", "abia", "acca"],
                0,
            )
        },
        // A bare 40-character base64 string is far too common to redact on its
        // own; the secret key is only recognisable by the name it is assigned to.
        spec(
            "aws-secret-access-key",
            r#"(?i)(?:secret_access_key|secretaccesskey)["']?[ \t]{0,8}(?::=|=>|=|:)[ \t]{0,8}["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
            &["secret_access_key", "secretaccesskey"],
            1,
        ),
        // Google API keys serve Cloud and the Gemini API alike. The
        // allowlist is gitleaks' (8.30.1, `gcp-api-key`): keys published in
        // Google's own client code and docs, public by design.
        RedactRuleSpec {
            allowlists: vec![allow(&GCP_PUBLIC_KEYS.map(|k| format!("^AIza{k}$")))],
            ..spec(
                "google-api-key",
                r"\b(AIza[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)",
                &["aiza"],
                1,
            )
        },
        spec(
            "gcp-oauth-client-secret",
            r"\b(GOCSPX-[A-Za-z0-9_-]{28})(?:[^A-Za-z0-9_-]|$)",
            &["gocspx-"],
            1,
        ),
        spec(
            "google-oauth-access-token",
            r"\bya29\.[A-Za-z0-9_-]{20,2048}",
            &["ya29."],
            0,
        ),
        spec(
            "azure-storage-account-key",
            r"(?i:accountkey)[ \t]{0,8}=[ \t]{0,8}([A-Za-z0-9+/]{86}==)",
            &["accountkey"],
            1,
        ),
        // Entra ID client secrets: three characters, a digit, `Q~`, then 31-34 more.
        spec(
            "azure-ad-client-secret",
            r"(?:^|[^A-Za-z0-9_~.-])([A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)",
            &[
                "0q~", "1q~", "2q~", "3q~", "4q~", "5q~", "6q~", "7q~", "8q~", "9q~",
            ],
            1,
        ),
        // The signature of a shared-access-signature URL is the secret part.
        spec(
            "azure-sas-token",
            r"[?&]sig=([A-Za-z0-9%+/]{40,100}(?:%3D|=){0,2})",
            &["sig="],
            1,
        ),
        spec(
            "alibaba-access-key-id",
            r"\bLTAI[A-Za-z0-9]{12,20}\b",
            &["ltai"],
            0,
        ),
        spec(
            "digitalocean-token",
            r"\bdo[opr]_v1_[a-f0-9]{64}\b",
            &["dop_v1_", "doo_v1_", "dor_v1_"],
            0,
        ),
        // A Heroku API key is a bare UUID, so only its name makes it a secret.
        spec(
            "heroku-api-key",
            r#"(?i)heroku[A-Za-z0-9_.-]{0,20}["']?[ \t]{0,8}(?::=|=>|=|:)[ \t]{0,8}["']?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b"#,
            &["heroku"],
            1,
        ),
        spec(
            "vault-token",
            r"\bhv[sb]\.[A-Za-z0-9_-]{90,200}",
            &["hvs.", "hvb."],
            0,
        ),
    ]
}

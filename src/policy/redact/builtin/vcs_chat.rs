//! Source hosting (GitHub, GitLab, Bitbucket) and chat (Slack, Discord,
//! Telegram, Microsoft Teams).

use super::spec;
use crate::policy::redact::RedactRuleSpec;

pub(super) fn rules() -> Vec<RedactRuleSpec> {
    vec![
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
            r"\bglpat-[A-Za-z0-9_-]{20,300}(?:\.[A-Za-z0-9_-]{1,64}){0,4}",
            &["glpat-"],
            0,
        ),
        spec(
            "gitlab-runner-token",
            r"\bglrt-[A-Za-z0-9_-]{20,300}(?:\.[A-Za-z0-9_-]{1,64}){0,4}",
            &["glrt-"],
            0,
        ),
        spec(
            "gitlab-pipeline-trigger-token",
            r"\bglptt-[a-f0-9]{40}\b",
            &["glptt-"],
            0,
        ),
        spec(
            "gitlab-deploy-token",
            r"\bgldt-[A-Za-z0-9_-]{20,300}",
            &["gldt-"],
            0,
        ),
        spec(
            "bitbucket-app-password",
            r"\bATBB[A-Za-z0-9_=.-]{32}\b",
            &["atbb"],
            0,
        ),
        spec(
            "slack-bot-token",
            r"\bxoxb-[0-9]{10,13}-[0-9]{10,13}-[A-Za-z0-9-]{20,64}",
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
            "slack-app-token",
            r"\bxapp-[0-9]-[A-Z0-9]{9,12}-[0-9]{10,13}-[a-f0-9]{64}\b",
            &["xapp-"],
            0,
        ),
        spec(
            "slack-webhook-url",
            r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,120}",
            &["hooks.slack.com"],
            0,
        ),
        // No fixed literal: the first part is the base64 of a numeric user id
        // (17-20 digits, so it starts M, N or O and its second character is
        // D, T, j or z). The exact part lengths keep it precise. Spelt as an
        // alternation, the twelve two-letter starts become the regex's own
        // literal prefilter (as `[MNO][DTjz]` they do not): 3× faster where
        // it runs over all text. Where the fingerprint runs, the rule runs
        // only where its class prefix (`[MNO][DTjz]`, alphanumerics) occurs.
        spec(
            "discord-bot-token",
            r"\b((?:M[DTjz]|N[DTjz]|O[DTjz])[A-Za-z0-9]{22,24}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})(?:[^A-Za-z0-9_-]|$)",
            &[],
            1,
        ),
        spec(
            "discord-webhook-url",
            r"https://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/([A-Za-z0-9_-]{60,80})",
            &["/api/webhooks/"],
            1,
        ),
        // `<bot id>:AA<33 characters>`; the id alone is public.
        spec(
            "telegram-bot-token",
            r"\b([0-9]{8,10}:AA[A-Za-z0-9_-]{33})(?:[^A-Za-z0-9_-]|$)",
            &[":aa"],
            1,
        ),
        spec(
            "microsoft-teams-webhook-url",
            r"https://[a-z0-9-]{1,64}\.webhook\.office\.com/webhookb2/[a-f0-9-]{36}@[a-f0-9-]{36}/IncomingWebhook/[a-f0-9]{32}/[a-f0-9-]{36}",
            &["webhook.office.com"],
            0,
        ),
    ]
}

//! Generated true positives and near misses for the built-in formats that are
//! "prefix + characters of a set, of a length": each format below yields a
//! token that must be redacted (alone, under its own id, with its context
//! kept) and tokens one step off that must be left alone — a wrong prefix,
//! one character short, a character outside the set, and (for formats with
//! an exact length and a closing boundary) one character long.
//!
//! Everything is derived from the format and a seed, so the data is
//! deterministic and no real secret is in the repository.

use super::*;

/// One piece of a token: literal text or `n` generated characters of a set.
#[derive(Clone, Copy)]
enum Part {
    Lit(&'static str),
    Gen(&'static str, usize),
}
use Part::{Gen, Lit};

/// A format: what comes before the secret (part of the match or context),
/// the secret's parts, and what follows.
struct Format {
    id: &'static str,
    before: &'static str,
    parts: &'static [Part],
    after: &'static str,
    /// One more character at the end is not a token any more (an exact length
    /// followed by a boundary).
    exact: bool,
}

const A: &str = ALNUM;
const H: &str = HEX;
const U: &str = URLSAFE;
const D: &str = DIGITS;
const UPPER_ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LOWER_ALNUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";

const FORMATS: &[Format] = &[
    Format {
        id: "gcp-oauth-client-secret",
        before: "client_id x, secret ",
        parts: &[Lit("GOCSPX-"), Gen(U, 28)],
        after: " end",
        exact: true,
    },
    Format {
        id: "google-oauth-access-token",
        before: "Bearer ",
        parts: &[Lit("ya29."), Gen(U, 120)],
        after: " end",
        exact: false,
    },
    Format {
        id: "azure-ad-client-secret",
        before: "client secret ",
        parts: &[Gen(A, 3), Gen(D, 1), Lit("Q~"), Gen(A, 34)],
        after: " end",
        exact: true,
    },
    Format {
        id: "azure-sas-token",
        before: "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=",
        parts: &[Gen(A, 43), Lit("%3D")],
        after: " end",
        exact: false,
    },
    Format {
        id: "alibaba-access-key-id",
        before: "id ",
        parts: &[Lit("LTAI"), Gen(A, 20)],
        after: " end",
        exact: true,
    },
    Format {
        id: "digitalocean-token",
        before: "do ",
        parts: &[Lit("dop_v1_"), Gen(H, 64)],
        after: " end",
        exact: true,
    },
    Format {
        id: "vault-token",
        before: "VAULT_TOKEN ",
        parts: &[Lit("hvs."), Gen(U, 95)],
        after: " end",
        exact: false,
    },
    Format {
        id: "gitlab-runner-token",
        before: "runner ",
        parts: &[Lit("glrt-"), Gen(U, 20)],
        after: " end",
        exact: false,
    },
    Format {
        id: "gitlab-pipeline-trigger-token",
        before: "trigger ",
        parts: &[Lit("glptt-"), Gen(H, 40)],
        after: " end",
        exact: true,
    },
    Format {
        id: "gitlab-deploy-token",
        before: "deploy ",
        parts: &[Lit("gldt-"), Gen(U, 20)],
        after: " end",
        exact: false,
    },
    Format {
        id: "bitbucket-app-password",
        before: "app ",
        parts: &[Lit("ATBB"), Gen(A, 32)],
        after: " end",
        exact: true,
    },
    Format {
        id: "slack-app-token",
        before: "app ",
        parts: &[
            Lit("xapp-1-"),
            Gen(UPPER_ALNUM, 11),
            Lit("-"),
            Gen(D, 13),
            Lit("-"),
            Gen(H, 64),
        ],
        after: " end",
        exact: true,
    },
    Format {
        id: "discord-webhook-url",
        before: "POST https://discord.com/api/webhooks/123456789012345678/",
        parts: &[Gen(U, 68)],
        after: " end",
        exact: false,
    },
    Format {
        id: "telegram-bot-token",
        before: "bot ",
        parts: &[Gen(D, 10), Lit(":AA"), Gen(U, 33)],
        after: " end",
        exact: true,
    },
    Format {
        id: "microsoft-teams-webhook-url",
        before: "POST ",
        parts: &[
            Lit("https://acme.webhook.office.com/webhookb2/"),
            Gen(H, 8),
            Lit("-1111-2222-3333-"),
            Gen(H, 12),
            Lit("@"),
            Gen(H, 8),
            Lit("-4444-5555-6666-"),
            Gen(H, 12),
            Lit("/IncomingWebhook/"),
            Gen(H, 32),
            Lit("/"),
            Gen(H, 8),
            Lit("-7777-8888-9999-"),
            Gen(H, 12),
        ],
        after: " end",
        exact: false,
    },
    Format {
        id: "stripe-webhook-secret",
        before: "whsec ",
        parts: &[Lit("whsec_"), Gen(A, 32)],
        after: " end",
        exact: false,
    },
    Format {
        id: "square-access-token",
        before: "sq ",
        parts: &[Lit("sq0atp-"), Gen(U, 22)],
        after: " end",
        exact: true,
    },
    Format {
        id: "shopify-token",
        before: "shop ",
        parts: &[Lit("shpat_"), Gen(H, 32)],
        after: " end",
        exact: true,
    },
    Format {
        id: "braintree-access-token",
        before: "bt ",
        parts: &[
            Lit("access_token$production$"),
            Gen(LOWER_ALNUM, 16),
            Lit("$"),
            Gen(H, 32),
        ],
        after: " end",
        exact: true,
    },
    Format {
        id: "groq-api-key",
        before: "groq ",
        parts: &[Lit("gsk_"), Gen(A, 52)],
        after: " end",
        exact: true,
    },
    Format {
        id: "replicate-api-token",
        before: "r8 ",
        parts: &[Lit("r8_"), Gen(A, 37)],
        after: " end",
        exact: true,
    },
    Format {
        id: "perplexity-api-key",
        before: "pplx ",
        parts: &[Lit("pplx-"), Gen(A, 48)],
        after: " end",
        exact: true,
    },
    Format {
        id: "xai-api-key",
        before: "grok ",
        parts: &[Lit("xai-"), Gen(A, 80)],
        after: " end",
        exact: true,
    },
    Format {
        id: "nvidia-api-key",
        before: "nv ",
        parts: &[Lit("nvapi-"), Gen(U, 64)],
        after: " end",
        exact: true,
    },
    Format {
        id: "crates-io-api-token",
        before: "cargo login ",
        parts: &[Lit("cio"), Gen(A, 32)],
        after: " end",
        exact: true,
    },
    Format {
        id: "rubygems-api-key",
        before: "gem ",
        parts: &[Lit("rubygems_"), Gen(H, 48)],
        after: " end",
        exact: true,
    },
    Format {
        id: "docker-hub-pat",
        before: "docker login -p ",
        parts: &[Lit("dckr_pat_"), Gen(U, 27)],
        after: " end",
        exact: true,
    },
    Format {
        id: "nuget-api-key",
        before: "nuget push -k ",
        parts: &[Lit("oy2"), Gen(LOWER_ALNUM, 43)],
        after: " end",
        exact: true,
    },
    Format {
        id: "linear-api-key",
        before: "linear ",
        parts: &[Lit("lin_api_"), Gen(A, 40)],
        after: " end",
        exact: true,
    },
    Format {
        id: "new-relic-user-api-key",
        before: "nr ",
        parts: &[Lit("NRAK-"), Gen(UPPER_ALNUM, 27)],
        after: " end",
        exact: true,
    },
    // Formats with hand-written tests in builtin.rs get generated cases too.
    Format {
        id: "aws-access-key-id",
        before: "key ",
        parts: &[Lit("AKIA"), Gen(UPPER_B32, 16)],
        after: " end",
        exact: true,
    },
    Format {
        id: "github-pat",
        before: "token ",
        parts: &[Lit("ghp_"), Gen(A, 36)],
        after: " end",
        exact: true,
    },
    Format {
        id: "npm-access-token",
        before: "npm ",
        parts: &[Lit("npm_"), Gen(A, 36)],
        after: " end",
        exact: true,
    },
    Format {
        id: "huggingface-access-token",
        before: "hf ",
        parts: &[Lit("hf_"), Gen(LETTERS, 34)],
        after: " end",
        exact: true,
    },
    Format {
        id: "twilio-api-key",
        before: "twilio ",
        parts: &[Lit("SK"), Gen(H, 32)],
        after: " end",
        exact: true,
    },
];

/// The ids the table covers, for the every-rule-is-tested check.
pub(super) fn generated_ids() -> Vec<&'static str> {
    FORMATS.iter().map(|f| f.id).collect()
}

fn render(parts: &[Part], seed: usize, edit: impl Fn(usize, &mut String)) -> String {
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        let mut piece = match *p {
            Lit(s) => s.to_string(),
            Gen(set, n) => gen(set, n, seed + i),
        };
        edit(i, &mut piece);
        out.push_str(&piece);
    }
    out
}

/// A different character of the same kind, so only the value changes.
fn other_char(c: char) -> char {
    match c {
        '0'..='8' => ((c as u8) + 1) as char,
        '9' => '0',
        'a'..='y' | 'A'..='Y' => ((c as u8) + 1) as char,
        'z' => 'a',
        'Z' => 'A',
        _ => 'x',
    }
}

fn check(f: &Format, seed: usize) {
    let token = render(f.parts, seed, |_, _| {});
    assert_redacts(f.id, f.before, &token, f.after);
    assert_redacts(f.id, &format!("first line\n{}", f.before), &token, "\n");

    let first_lit = f.parts.iter().position(|p| matches!(p, Lit(_)));
    let last_gen = f.parts.iter().rposition(|p| matches!(p, Gen(..)));
    let longest_gen = (0..f.parts.len())
        .filter_map(|i| match f.parts[i] {
            Gen(_, n) => Some((n, i)),
            Lit(_) => None,
        })
        .max()
        .map(|(_, i)| i);
    let mut misses = Vec::new();
    // The SAS signature's marker (`sig=`) is context, tested in builtin.rs.
    if let Some(lit) = first_lit.filter(|_| f.id != "azure-sas-token") {
        misses.push((
            "wrong prefix",
            render(f.parts, seed, |i, s| {
                if i == lit {
                    let at = s.find(|c: char| c.is_ascii_alphanumeric()).unwrap_or(0);
                    let c = s[at..].chars().next().unwrap_or('x');
                    s.replace_range(at..at + c.len_utf8(), &other_char(c).to_string());
                }
            }),
        ));
    }
    let mut limit = usize::MAX;
    if let Some(last) = last_gen {
        let Gen(_, n) = f.parts[last] else {
            unreachable!()
        };
        let short = match f.id {
            // Ranges: one below the minimum.
            "google-oauth-access-token" | "gitlab-runner-token" | "gitlab-deploy-token" => 19,
            "vault-token" => 89,
            "discord-webhook-url" => 59,
            // `%3D` is three more characters of the class.
            "azure-sas-token" => 36,
            "alibaba-access-key-id" => 11,
            "azure-ad-client-secret" => 30,
            "stripe-webhook-secret" => 31,
            _ => n - 1,
        };
        if Some(last) == longest_gen {
            limit = short;
        }
        misses.push((
            "too short",
            render(f.parts, seed, |i, s| {
                if i == last {
                    s.truncate(short);
                }
            }),
        ));
        if f.exact {
            misses.push((
                "too long",
                render(f.parts, seed, |i, s| {
                    if i == last {
                        s.push('a');
                    }
                }),
            ));
        }
    }
    if let Some(longest) = longest_gen {
        misses.push((
            "character outside the set",
            render(f.parts, seed, |i, s| {
                if i == longest {
                    // Early enough that neither side is long enough on its own.
                    let mid = (s.len() / 2).min(limit / 2);
                    s.replace_range(mid..mid + 1, "#");
                }
            }),
        ));
    }
    for (what, token) in misses {
        let text = format!("{}{token}{}", f.before, f.after);
        let r = defaults();
        assert!(
            !r.matching_rules(&text).contains(&f.id),
            "{}: near miss ({what}) was redacted: {text:?} -> {:?}",
            f.id,
            r.redact(&text)
        );
    }
}

#[test]
fn generated_true_positives_and_near_misses() {
    for f in FORMATS {
        for seed in [1, 7, 23] {
            check(f, seed);
        }
    }
}

//! toolgate fronting upstream MCP servers over Streamable HTTP (`url` in a
//! `[server]` manifest), with the Python SDK (mcp 2.3.0) as the client of
//! `toolgate serve` (stdio): the real @modelcontextprotocol/server-everything
//! in its `streamableHttp` mode, and the Python-SDK fake upstream
//! (tests/upstream/fake_upstream.py `--http`) for the Authorization header,
//! cancellation, and a server that goes away mid-session and comes back.
//! Both listen on 127.0.0.1 with an ephemeral port.
//!
//! The servers and clients come from tests/upstream/install.sh (which
//! .ci/run runs); when they cannot be installed these tests fail and say
//! so.

#[path = "common/serve.rs"]
mod serve;
#[path = "common/upstream.rs"]
mod upstream;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use serve::{repo, toolgate, HttpServer};
use upstream::{call, node, python, wait_status, Setup, SECRET};

/// The bearer token toolgate sends upstream: it must reach the upstream
/// and appear nowhere else.
const TOKEN: &str = "tgtok-Zq7vXk2PwLm9RtY4";
/// The variable the manifests take it from.
const TOKEN_VAR: &str = "TOOLGATE_TEST_UPSTREAM_TOKEN";

/// An upstream server process group, killed when dropped.
struct Upstream {
    child: Child,
    port: u16,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test started.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// Waits until something accepts connections on 127.0.0.1:`port`.
fn wait_listening(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "nothing listens on 127.0.0.1:{port} after 30s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// server-everything in its Streamable HTTP mode, bound to 127.0.0.1 on a
/// free port (tests/upstream/listen_local.cjs binds it and reports the port).
fn everything_http() -> Upstream {
    let mut child = Command::new(node())
        .arg("--require")
        .arg(repo().join("tests/upstream/listen_local.cjs"))
        .arg(repo().join(
            "tests/upstream/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        ))
        .arg("streamableHttp")
        .env("PORT", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start server-everything");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(port) = line.strip_prefix("LISTENING ") {
                let _ = tx.send(port.trim().parse::<u16>().unwrap());
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("server-everything did not listen within 30s");
    let up = Upstream { child, port };
    wait_listening(port);
    up
}

/// The fake upstream over HTTP (restarted 2 s after it exits) on a free port.
fn fake_http(state: &std::path::Path) -> Upstream {
    fake_http_with(state, &[])
}

/// [`fake_http`] with more arguments (`--tls`).
fn fake_http_with(state: &std::path::Path, more: &[&str]) -> Upstream {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(python())
        .arg(repo().join("tests/upstream/fake_upstream.py"))
        .arg(state)
        .args(["--http", &port.to_string()])
        .args(more)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("start the fake upstream");
    let up = Upstream { child, port };
    wait_listening(port);
    up
}

/// What one client run saw.
struct Run {
    report: Value,
    stderr: String,
}

impl Setup {
    /// Declares server `name` (tools `prefix__…`) at `url` with a bearer
    /// token from [`TOKEN_VAR`].
    fn http_server(&self, name: &str, prefix: &str, url: &str) {
        let text = format!(
            "[server]\nname = \"{name}\"\nprefix = \"{prefix}\"\nurl = \"{url}\"\n\
             headers = {{ Authorization = \"Bearer ${{env:{TOKEN_VAR}}}\" }}\n"
        );
        fs::write(self.path(&format!("m/{name}.toml")), text).unwrap();
    }

    /// Runs the client's `steps` against `toolgate serve` (stdio), with the
    /// token in toolgate's environment, debug logging and a decision log.
    fn run(&self, steps: Value) -> Run {
        // The SDK's stdio client passes a fixed set of variables on;
        // `env` gives toolgate the ones under test.
        let prefix = [
            "env".to_string(),
            format!("{TOKEN_VAR}={TOKEN}"),
            "TOOLGATE_LOG=debug".to_string(),
        ];
        let log = self.path("decisions.jsonl").display().to_string();
        let (report, stderr) = self.run_client(&steps, &prefix, &["--decision-log".into(), log]);
        Run { report, stderr }
    }

    /// Asserts the token appears nowhere toolgate wrote.
    fn assert_token_hidden(&self, run: &Run) {
        assert!(!run.stderr.contains(TOKEN), "stderr shows the token");
        assert!(!run.report.to_string().contains(TOKEN), "the client saw it");
        let log = fs::read_to_string(self.path("decisions.jsonl")).unwrap_or_default();
        assert!(!log.is_empty(), "no decision log was written");
        assert!(!log.contains(TOKEN), "the decision log shows the token");
    }
}

#[test]
fn everything_over_http_runs_through_the_one_pipeline() {
    let up = everything_http();
    let s = Setup::new(
        "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [\"ev__*\"]\n\
         rules:\n  - id: no-forbidden-echo\n    tools: [ev__echo]\n    when: { arg: message, matches: forbidden }\n    decision: deny\n    reason: Echoing forbidden words is not allowed\n",
    );
    s.http_server(
        "everything",
        "ev",
        &format!("http://127.0.0.1:{}/mcp", up.port),
    );
    let doc = "toolgate://ev/demo://resource/static/document/features.md";
    let run = s.run(json!([
        {"do": "list", "as": "tools"},
        call("ev__echo", json!({"message": "hi"}), "ok"),
        call("ev__echo", json!({"message": "a forbidden word"}), "denied"),
        call("ev__echo", json!({"message": format!("key {SECRET}")}), "secret"),
        {"do": "progress", "tool": "ev__trigger-long-running-operation",
         "args": {"duration": 1, "steps": 3}, "as": "progress"},
        {"do": "read", "uri": doc, "as": "doc"},
    ]));
    let r = &run.report;
    let tools = r["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("ev__echo")), "{r}");
    assert!(
        tools
            .iter()
            .all(|t| t.as_str().unwrap().starts_with("ev__")),
        "{r}"
    );
    assert_eq!(r["ok"]["is_error"], false, "{r}");
    assert_eq!(r["ok"]["text"], "Echo: hi", "{r}");
    assert_eq!(r["denied"]["is_error"], true, "{r}");
    assert_eq!(
        r["denied"]["text"],
        "Echoing forbidden words is not allowed"
    );
    assert_eq!(
        r["secret"]["text"], "Echo: key [REDACTED:github-pat]",
        "{r}"
    );
    // Progress reaches the client, every update before the result.
    let updates = r["progress"]["updates"].as_array().unwrap();
    assert_eq!(updates.len(), 3, "{r}");
    assert_eq!(updates[2]["progress"], 3.0);
    assert_eq!(updates[2]["total"], 3.0);
    assert_eq!(r["doc"]["contents"][0]["uri"], doc, "{r}");
    assert!(
        r["doc"]["contents"][0]["text"].as_str().unwrap().len() > 100,
        "{r}"
    );
    // Pinned like a stdio server.
    assert!(s.path("m/everything.lock").exists());
    s.assert_token_hidden(&run);
}

#[test]
fn an_http_upstream_gets_its_token_and_recovers_after_it_went_away() {
    let s = Setup::new(
        "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [\"fake__*\"]\n",
    );
    let up = fake_http(&s.path("state"));
    s.http_server("fake", "fake", &format!("http://127.0.0.1:{}/mcp", up.port));
    let run = s.run(json!([
        call("fake__echo", json!({"text": "hi"}), "ok"),
        {"do": "cancel", "after": 1.0, "tool": "fake__sleep", "args": {"seconds": 30}, "as": "c"},
        // notifications/cancelled travels to the upstream after the call
        // returned: wait for its mark before the upstream is crashed.
        {"do": "wait_file", "path": s.path("state/cancelled"), "seconds": 10, "as": "cancel_seen"},
        call("fake__crash", json!({}), "crash"),
        call("fake__echo", json!({"text": "x"}), "down"),
        // Back after the restart (2 s, then Python's start) and toolgate's
        // backoff (0.5 s doubling): how long depends on the machine's load.
        {"do": "call", "tool": "fake__echo", "args": {"text": "back"}, "as": "back", "until_ok": 60},
        call("fake__echo", json!({"text": "leak-header"}), "leak"),
    ]));
    let r = &run.report;
    assert_eq!(r["ok"]["text"], "hi", "{r}");
    // The upstream saw the header with the variable substituted.
    assert_eq!(
        fs::read_to_string(s.path("state/auth")).unwrap(),
        format!("Bearer {TOKEN}")
    );
    // Cancellation reached the upstream (it writes a marker).
    assert_eq!(
        r["cancel_seen"], true,
        "the upstream never saw notifications/cancelled: {r}"
    );
    // Gone mid-session: error results naming the server, not a hang.
    for key in ["crash", "down"] {
        assert_eq!(r[key]["is_error"], true, "{key}: {r}");
        let text = r[key]["text"].as_str().unwrap();
        assert!(
            text.starts_with("upstream fake is unavailable: "),
            "{key}: {text}"
        );
    }
    // Back after the backoff, on a new session.
    assert_eq!(r["back"]["is_error"], false, "{r}");
    assert_eq!(r["back"]["text"], "back", "{r}");
    let starts = fs::read_to_string(s.path("state/starts")).unwrap();
    assert_eq!(starts.lines().count(), 2, "{starts}");
    // An error page that shows what was sent: an error result naming the
    // server and the status, not the page (nor the token, checked below).
    assert_eq!(
        r["leak"]["text"],
        "upstream fake is unavailable: Transport send error: Transport error: HTTP 500",
        "{r}"
    );
    s.assert_token_hidden(&run);
}

fn sessions(s: &Setup, state: &str) -> usize {
    s.lines_in(state, "sessions")
}

#[test]
fn reload_reconnects_only_the_changed_http_upstream_and_status_hides_the_token() {
    // HttpServer passes this process's environment on; every test that
    // sets the variable sets the same value.
    std::env::set_var(TOKEN_VAR, TOKEN);
    let s = Setup::new(
        "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [\"fake__*\"]\n",
    );
    fs::create_dir_all(s.path("state2")).unwrap();
    let (a, b) = (fake_http(&s.path("state")), fake_http(&s.path("state2")));
    s.http_server("fake", "fake", &format!("http://127.0.0.1:{}/mcp", a.port));
    s.http_server(
        "other",
        "other",
        &format!("http://127.0.0.1:{}/mcp", b.port),
    );
    let mut args = vec!["serve".to_string(), "--profile".into(), "up".into()];
    args.extend(s.config_args());
    let server = HttpServer::start(&args, s.root());
    let up = |v: &Value, name: &str| {
        v["upstreams"]
            .as_array()
            .is_some_and(|a| a.iter().any(|u| u["name"] == name && u["state"] == "up"))
    };
    let (_, st) = wait_status(&server, "both upstreams up", |v| {
        up(v, "fake") && up(v, "other")
    });
    let v: Value = serde_json::from_str(&st).unwrap();
    assert!(
        v["upstreams"]
            .as_array()
            .unwrap()
            .iter()
            .all(|u| u["tools"] == 6),
        "{st}"
    );
    assert!(!st.contains(TOKEN), "/status shows the token");
    assert_eq!((sessions(&s, "state"), sessions(&s, "state2")), (1, 1));

    // Changing one manifest reconnects that server only.
    let other = s.path("m/other.toml");
    let text = fs::read_to_string(&other).unwrap();
    fs::write(&other, format!("# changed\n{text}")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while sessions(&s, "state2") < 2 {
        assert!(Instant::now() < deadline, "other was not reconnected");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (_, st) = wait_status(&server, "other up again", |v| up(v, "other"));
    assert!(!st.contains(TOKEN), "/status shows the token");
    assert_eq!(
        sessions(&s, "state"),
        1,
        "an unchanged upstream reconnected"
    );

    // Removing a manifest ends its session; the other keeps going.
    fs::remove_file(&other).unwrap();
    let (_, st) = wait_status(&server, "other removed", |v| {
        v["upstreams"].as_array().is_some_and(|a| a.len() == 1)
    });
    let v: Value = serde_json::from_str(&st).unwrap();
    assert_eq!(v["upstreams"][0]["name"], "fake", "{st}");
    assert_eq!(v["upstreams"][0]["state"], "up", "{st}");
    assert_eq!(sessions(&s, "state"), 1);
    let stderr: Vec<String> = server.stderr.try_iter().collect();
    assert!(!stderr.is_empty());
    assert!(
        !stderr.iter().any(|l| l.contains(TOKEN)),
        "stderr shows the token"
    );
}

#[test]
fn pin_and_lazy_start_work_for_an_http_upstream() {
    let s = Setup::new(
        "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [\"fake__*\"]\n",
    );
    let up = fake_http(&s.path("state"));
    s.http_server("fake", "fake", &format!("http://127.0.0.1:{}/mcp", up.port));
    let manifest = s.path("m/fake.toml");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, format!("{text}start = \"lazy\"\n")).unwrap();
    let pin = |token: Option<&str>| {
        let mut cmd = Command::new(toolgate());
        cmd.arg("pin").args(s.config_args()).arg("fake");
        match token {
            Some(t) => cmd.env(TOKEN_VAR, t),
            None => cmd.env_remove(TOKEN_VAR),
        };
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    };
    // Without the variable: an error naming it, and no request upstream.
    let (ok, text) = pin(None);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "`{TOKEN_VAR}` is not set in toolgate's environment"
        )),
        "{text}"
    );
    assert_eq!(sessions(&s, "state"), 0);
    // With it: `toolgate pin` lists the tools over HTTP and writes the lock.
    let (ok, text) = pin(Some(TOKEN));
    assert!(ok, "{text}");
    assert!(!text.contains(TOKEN), "{text}");
    assert!(s.path("m/fake.lock").exists());
    assert_eq!(sessions(&s, "state"), 1);
    // Lazy: the pinned tools are listed without connecting ...
    let run = s.run(json!([{"do": "list", "as": "tools"}]));
    assert!(
        run.report["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("fake__echo")),
        "{}",
        run.report
    );
    assert_eq!(sessions(&s, "state"), 1, "a lazy server was connected");
    // ... and the first call connects.
    let run = s.run(json!([call("fake__echo", json!({"text": "hi"}), "ok")]));
    assert_eq!(run.report["ok"]["text"], "hi", "{}", run.report);
    assert_eq!(sessions(&s, "state"), 2);
    s.assert_token_hidden(&run);
}

#[test]
fn a_certificate_that_does_not_verify_is_refused_before_the_token_is_sent() {
    let s = Setup::new(
        "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [read, \"fake__*\"]\n",
    );
    let up = fake_http_with(&s.path("state"), &["--tls"]);
    s.http_server(
        "fake",
        "fake",
        &format!("https://127.0.0.1:{}/mcp", up.port),
    );
    let run = s.run(json!([
        {"do": "list", "as": "tools"},
        call("read", json!({"path": "nothing.txt"}), "read"),
    ]));
    let r = &run.report;
    // The server's tools never appear: toolgate did not get past TLS.
    assert_eq!(r["tools"], json!(["read"]), "{r}");
    assert!(
        run.stderr.contains("MCP handshake with https://127.0.0.1:")
            && run
                .stderr
                .contains("invalid peer certificate: UnknownIssuer"),
        "{}",
        run.stderr
    );
    // The upstream got no request, so no token.
    assert!(!s.path("state/auth").exists());
    s.assert_token_hidden(&run);
}

#[test]
fn http_server_manifest_errors_name_file_header_and_variable() {
    let s = Setup::new("version: 1\nextends: [builtin:default]\n");
    fs::write(
        s.path("m/web.toml"),
        "[server]\nname = \"web\"\nurl = \"https://example.com/mcp\"\nheaders = { Authorization = \"Bearer ${env:TOOLGATE_TEST_NOT_SET}\" }\n",
    )
    .unwrap();
    fs::write(
        s.path("m/both.toml"),
        "[server]\nname = \"both\"\ncommand = [\"x\"]\nurl = \"https://example.com/mcp\"\n",
    )
    .unwrap();
    fs::write(s.path("m/neither.toml"), "[server]\nname = \"neither\"\n").unwrap();
    fs::write(
        s.path("m/ftp.toml"),
        "[server]\nname = \"ftp\"\nurl = \"ftp://example.com/mcp\"\n",
    )
    .unwrap();
    // A set variable's value never shows in `check` output.
    fs::write(
        s.path("m/ok.toml"),
        format!(
            "[server]\nname = \"ok\"\nurl = \"https://example.com/mcp\"\nheaders = {{ Authorization = \"Bearer ${{env:{TOKEN_VAR}}}\", Accept = \"x\" }}\n"
        ),
    )
    .unwrap();
    let out = Command::new(toolgate())
        .arg("check")
        .args(&s.config_args()[..4])
        .env(TOKEN_VAR, TOKEN)
        .env_remove("TOOLGATE_TEST_NOT_SET")
        .output()
        .unwrap();
    let err =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    for want in [
        "web.toml:4:1: error: header `Authorization` uses `${env:TOOLGATE_TEST_NOT_SET}`, but `TOOLGATE_TEST_NOT_SET` is not set in toolgate's environment",
        "both.toml:4:1: error: a server has either `command` (stdio) or `url` (Streamable HTTP), not both",
        "neither.toml:2:1: error: a server needs `command = [...]` (stdio) or `url = \"…\"` (Streamable HTTP)",
        "ftp.toml:3:1: error: `url` must start with https:// or http://, not `ftp://example.com/mcp`",
        "ok.toml:4:1: error: header `Accept` is set by the MCP transport and cannot be configured",
    ] {
        assert!(err.contains(want), "missing {want:?} in:\n{err}");
    }
    assert!(!err.contains(TOKEN), "{err}");
}

#[test]
fn sampling_and_elicitation_over_http_reach_the_client_redacted() {
    let up = everything_http();
    let s = Setup::new(
        "version: 1\nextends: [builtin:default]\ntools:\n  profiles:\n    up: [\"ev__*\"]\n",
    );
    s.http_server(
        "everything",
        "ev",
        &format!("http://127.0.0.1:{}/mcp", up.port),
    );
    // server-everything adds these tools after the handshake and says so
    // with tools/list_changed (`pin = "off"`: they would be withheld as new).
    let manifest = s.path("m/everything.toml");
    let text = fs::read_to_string(&manifest).unwrap();
    fs::write(&manifest, format!("{text}pin = \"off\"\n")).unwrap();
    let run = s.run(json!([
        {"do": "sleep", "seconds": 3.0},
        call("ev__trigger-sampling-request", json!({"prompt": format!("hi {SECRET}")}), "sampling"),
        call("ev__trigger-elicitation-request", json!({}), "elicitation"),
        {"do": "asked", "as": "asked"},
    ]));
    let r = &run.report;
    assert_eq!(r["sampling"]["is_error"], false, "{r}");
    // The upstream's request reached the client redacted, and the answer
    // went back to the upstream, which returned it.
    let asked = r["asked"].as_array().unwrap();
    assert!(
        asked[0]["sampling"]
            .as_str()
            .unwrap()
            .contains("hi [REDACTED:github-pat]"),
        "{r}"
    );
    assert!(
        r["sampling"]["text"].as_str().unwrap().contains(
            "sampled: Resource trigger-sampling-request context: hi [REDACTED:github-pat]"
        ),
        "{r}"
    );
    assert_eq!(r["elicitation"]["is_error"], false, "{r}");
    assert!(
        r["elicitation"]["text"]
            .as_str()
            .unwrap()
            .contains("User provided the requested information"),
        "{r}"
    );
    assert!(!r.to_string().contains(SECRET), "{r}");
    s.assert_token_hidden(&run);
}

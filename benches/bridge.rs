//! Round trip of one `before` request through `toolgate bridge --stdio`, as
//! a host sees it: write one line to the bridge's stdin, read its answer
//! line from stdout, one request at a time. A measured loop, not criterion:
//! the number wanted is the distribution (p50, p90, p99) of single round
//! trips, which criterion's batching would average away.
//!
//! Then the same requests as a host with many calls at once sends them:
//! bursts of 1000 lines written together, answers read as they come (the
//! bridge answers small requests as it reads them and writes the answers
//! of a burst together).
//!
//!     cargo bench --bench bridge [-- ITERATIONS]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn main() {
    let iterations: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(20_000);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello\n").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["bridge", "--stdio", "--no-watch", "--workspace"])
        .arg(dir.path())
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("toolgate bridge starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let cases = [
        (
            "read notes.txt (allow)",
            r#""tool":"read","input":{"path":"notes.txt"}"#,
            "allow",
        ),
        (
            "bash `git status && cargo test` (allow)",
            r#""tool":"bash","input":{"command":"git status && cargo test"}"#,
            "allow",
        ),
        (
            "read .env (deny)",
            r#""tool":"read","input":{"path":".env"}"#,
            "deny",
        ),
    ];
    println!(
        "toolgate bridge: round trip of one before-request ({iterations} per case, one at a time)"
    );
    let mut line = String::new();
    for (name, call, expect) in cases {
        let mut times = Vec::with_capacity(iterations);
        for i in 0..(iterations + iterations / 10) {
            let request =
                format!("{{\"id\":{i},\"type\":\"before\",\"call_id\":\"c{i}\",{call}}}\n");
            let started = Instant::now();
            stdin.write_all(request.as_bytes()).unwrap();
            stdin.flush().unwrap();
            line.clear();
            stdout.read_line(&mut line).unwrap();
            let elapsed = started.elapsed();
            assert!(
                line.contains(&format!("\"decision\":\"{expect}\"")),
                "{name}: unexpected answer {line}"
            );
            // The first tenth warms up.
            if i >= iterations / 10 {
                times.push(elapsed);
            }
        }
        times.sort();
        let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "  {name:<42} p50 {:>6.1} µs   p90 {:>6.1} µs   p99 {:>6.1} µs",
            us(at(0.5)),
            us(at(0.9)),
            us(at(0.99))
        );
    }
    const BURST: usize = 1000;
    let rounds = (iterations / BURST).max(5);
    println!("toolgate bridge: bursts of {BURST} before-requests written at once ({rounds} bursts per case)");
    let mut id = 0usize;
    for (name, call, expect) in cases {
        let mut per_call = Vec::with_capacity(rounds);
        for round in 0..rounds + 1 {
            let mut burst = String::new();
            for _ in 0..BURST {
                id += 1;
                burst.push_str(&format!(
                    "{{\"id\":{id},\"type\":\"before\",\"call_id\":\"b{id}\",{call}}}\n"
                ));
            }
            let started = Instant::now();
            // Written from another thread: a burst is larger than the pipe.
            let writer = std::thread::scope(|scope| {
                let handle = scope.spawn(|| {
                    stdin.write_all(burst.as_bytes()).unwrap();
                    stdin.flush().unwrap();
                });
                for _ in 0..BURST {
                    line.clear();
                    stdout.read_line(&mut line).unwrap();
                    assert!(
                        line.contains(&format!("\"decision\":\"{expect}\"")),
                        "{name}: unexpected answer {line}"
                    );
                }
                handle.join()
            });
            writer.unwrap();
            // The first burst warms up.
            if round > 0 {
                per_call.push(started.elapsed() / BURST as u32);
            }
        }
        per_call.sort();
        println!(
            "  {name:<42} per request: median {:>6.1} µs   best {:>6.1} µs",
            per_call[per_call.len() / 2].as_secs_f64() * 1e6,
            per_call[0].as_secs_f64() * 1e6
        );
    }
    drop(stdin);
    let _ = child.wait();
}

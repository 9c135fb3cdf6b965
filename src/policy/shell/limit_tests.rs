//! The analyzer's limits: long and deeply nested scripts are refused with
//! the limit named, quickly and without exhausting the stack.

use std::time::{Duration, Instant};

use super::*;

fn over(script: &str) -> LimitExceeded {
    let a = analyze(script);
    match a.over_limit {
        Some(over) => over,
        None => panic!("{script:.80} should be over a limit: {a:?}"),
    }
}

fn within(script: &str) -> ShellAnalysis {
    let a = analyze(script);
    assert!(a.over_limit.is_none(), "{script:.80}: {a:?}");
    a
}

#[test]
fn deep_shell_nesting_is_over_the_limit() {
    // Quoting grows exponentially with depth, so 20 levels of `bash -c`
    // nest through here-documents instead, whose size grows linearly.
    let mut script = "rm -rf /".to_string();
    for level in 0..20 {
        script = format!("bash <<'E{level}'\n{script}\nE{level}");
    }
    assert_eq!(over(&script).rule(), "limits.max_command_nesting");
    // Quoted `bash -c` bodies double in size per level: 12 levels against
    // a tighter nesting limit.
    let mut script = "rm -rf /".to_string();
    for _ in 0..12 {
        let quoted = script.replace('\\', "\\\\").replace('"', "\\\"");
        script = format!("bash -c \"{quoted}\"");
    }
    let eight = ShellLimits {
        max_nesting: 8,
        ..ShellLimits::default()
    };
    assert_eq!(
        analyze_with(&script, eight).over_limit,
        Some(LimitExceeded::CommandNesting { max: 8 })
    );
    // Within the limit, the innermost command is still found.
    let mut script = "rm -rf /".to_string();
    for _ in 0..5 {
        let quoted = script.replace('\\', "\\\\").replace('"', "\\\"");
        script = format!("bash -c \"{quoted}\"");
    }
    let a = within(&script);
    assert!(a.commands.iter().any(|c| c.program() == "rm"));
}

#[test]
fn deep_syntax_nesting_is_over_the_limit() {
    let script = format!("{}ls{}", "( ".repeat(50), " )".repeat(50));
    assert_eq!(over(&script).rule(), "limits.max_command_nesting");
    // A long && chain is flat for the user but deep in the tree.
    let chain = vec!["true"; 5000].join(" && ");
    assert_eq!(within(&chain).commands.len(), 5000);
}

#[test]
fn oversized_script_is_over_the_limit_unread() {
    let a = analyze(&"x".repeat(200_000));
    assert!(a.commands.is_empty());
    let over = a.over_limit.expect("over");
    assert_eq!(over.rule(), "limits.max_command_bytes");
    assert!(over.message().contains("195.3KB"), "{}", over.message());
}

#[test]
fn nested_find_exec_stops_at_the_limit() {
    // Each `find -exec` ran the analyzer once more on the rest: this once
    // overflowed the stack (found by hand while auditing the recursion).
    let script = format!("{}ls", "find . -exec ".repeat(4000));
    let started = Instant::now();
    assert_eq!(over(&script).rule(), "limits.max_command_nesting");
    assert!(started.elapsed() < Duration::from_secs(5));
    let a = within("find . -exec find . -exec rm {} \\; \\;");
    assert_eq!(
        a.commands.iter().map(|c| c.program()).collect::<Vec<_>>(),
        ["find", "find", "rm"]
    );
}

#[test]
fn long_wrapper_chains_stop_at_the_limit() {
    // Every wrapper level copied the remaining words: 12,000 `sudo`s took
    // 25 s of CPU for one decision before wrappers counted as nesting.
    let script = format!("{}ls", "sudo ".repeat(12_000));
    let started = Instant::now();
    assert_eq!(over(&script).rule(), "limits.max_command_nesting");
    assert!(started.elapsed() < Duration::from_secs(5));
    let a = within("sudo env A=1 timeout 5 nice -n 5 nohup ls");
    assert_eq!(a.commands.last().map(|c| c.program()), Some("ls"));
}

#[test]
fn limits_come_from_the_caller() {
    let tight = ShellLimits {
        max_bytes: 10,
        max_nesting: 1,
        ..ShellLimits::default()
    };
    assert_eq!(
        analyze_with("echo hello world", tight).over_limit,
        Some(LimitExceeded::CommandBytes { bytes: 16, max: 10 })
    );
    let shallow = ShellLimits {
        max_bytes: 100,
        max_nesting: 1,
        ..ShellLimits::default()
    };
    assert!(analyze_with("(ls)", shallow).over_limit.is_none());
    assert!(analyze_with("sudo ls", shallow).over_limit.is_none());
    for script in ["( (ls) )", "sudo sudo ls", "bash -c 'bash -c ls'"] {
        assert_eq!(
            analyze_with(script, shallow).over_limit,
            Some(LimitExceeded::CommandNesting { max: 1 }),
            "{script}"
        );
    }
}

#[test]
fn a_script_that_parses_slowly_is_cut_off() {
    // tree-sitter's error recovery took 50 s on 60 KB of `$[` (found by
    // probing deep inputs through `eval`): parsing stops at the deadline.
    let script = "$[".repeat(30_000);
    let started = Instant::now();
    assert_eq!(over(&script).rule(), "commands.too_complex");
    assert!(started.elapsed() < Duration::from_secs(5));
    let quick = ShellLimits {
        max_parse_time: Duration::from_millis(1),
        ..ShellLimits::default()
    };
    assert_eq!(
        analyze_with(&"$[".repeat(3_000), quick).over_limit,
        Some(LimitExceeded::CommandTooComplex { max_ms: 1 })
    );
}

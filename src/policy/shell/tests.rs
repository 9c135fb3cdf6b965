//! Unit tests for the shell analyzer and command patterns.

use super::*;

fn programs(script: &str) -> Vec<String> {
    analyze(script)
        .commands
        .iter()
        .map(|c| c.program().to_string())
        .collect()
}

fn clean(script: &str) -> ShellAnalysis {
    let a = analyze(script);
    assert!(a.unparsed.is_empty(), "{script}: {:?}", a.unparsed);
    a
}

fn unparsed(script: &str) -> ShellAnalysis {
    let a = analyze(script);
    assert!(!a.unparsed.is_empty(), "{script} should be unparsed: {a:?}");
    a
}

fn cmd(words: &[&str]) -> SimpleCommand {
    SimpleCommand::new(words.iter().map(|w| w.to_string()).collect())
}

fn pat(p: &str) -> CommandPattern {
    CommandPattern::parse(p).unwrap()
}

/// True when some command of the script matches in the mode.
fn hits(pattern: &str, script: &str, mode: MatchMode) -> bool {
    let p = pat(pattern);
    analyze(script).commands.iter().any(|c| p.matches(c, mode))
}

#[test]
fn reordered_short_flags_match_in_both_modes() {
    for mode in [MatchMode::Prefix, MatchMode::Anywhere] {
        for c in [
            "rm -fr x",
            "rm -r -f x",
            "rm -rfv x",
            "rm -Rf x",
            "rm -f -R x",
        ] {
            assert!(hits("rm -rf", c, mode), "{c} {mode:?}");
        }
    }
}

#[test]
fn long_flag_aliases_of_rm() {
    assert!(hits(
        "rm -rf",
        "rm --recursive --force x",
        MatchMode::Anywhere
    ));
    assert!(hits("rm -rf", "rm --force -r x", MatchMode::Anywhere));
    assert!(!hits("rm -rf", "rm -r x", MatchMode::Anywhere));
}

#[test]
fn quoted_text_is_one_argument() {
    let a = clean("echo \"rm -rf /\"");
    assert_eq!(a.commands.len(), 1);
    assert_eq!(a.commands[0].words, ["echo", "rm -rf /"]);
    assert!(!hits("rm -rf", "echo \"rm -rf /\"", MatchMode::Anywhere));
}

#[test]
fn commit_message_is_not_a_command() {
    assert!(!hits(
        "rm -rf",
        "git commit -m \"rm -rf\"",
        MatchMode::Anywhere
    ));
    assert_eq!(programs("git commit -m \"rm -rf\""), ["git"]);
}

#[test]
fn wrappers_and_assignments_are_looked_through() {
    let a = clean("FOO=1 sudo -u root env X=2 rm -rf /");
    let p: Vec<_> = a.commands.iter().map(|c| c.program()).collect();
    assert_eq!(p, ["sudo", "env", "rm"]);
    assert!(a.commands[0].is_wrapper && a.commands[1].is_wrapper);
    assert!(!a.commands[2].is_wrapper);
    assert_eq!(a.commands[2].words, ["rm", "-rf", "/"]);
}

#[test]
fn each_wrapper_reports_the_wrapped_command() {
    for script in [
        "env -i -u HOME rm -rf x",
        "timeout -s KILL 10 rm -rf x",
        "timeout --kill-after=5 10s rm -rf x",
        "nice -n 5 rm -rf x",
        "nohup rm -rf x",
        "command -p rm -rf x",
        "exec rm -rf x",
        "xargs -n 1 -I {} -P 4 rm -rf",
        "sudo -u root -g wheel -D /tmp rm -rf x",
        "sudo -Eu root rm -rf x",
        "doas -u root rm -rf x",
        "stdbuf -oL rm -rf x",
        "stdbuf -o L rm -rf x",
        "time rm -rf x",
        "ionice -c 3 rm -rf x",
    ] {
        let a = clean(script);
        assert!(a.commands[0].is_wrapper, "{script}");
        assert!(a.commands[0].file_operands().is_empty(), "{script}");
        let last = a.commands.last().unwrap();
        assert_eq!(last.program(), "rm", "{script}");
        assert!(pat("rm -rf").matches(last, MatchMode::Prefix), "{script}");
    }
}

#[test]
fn shell_c_bodies_are_analyzed() {
    assert!(hits(
        "rm -rf",
        "bash -lc 'ls && rm -rf /'",
        MatchMode::Anywhere
    ));
    assert!(hits("rm -rf", "sh -c \"rm -rf /\"", MatchMode::Anywhere));
    assert!(hits("rm -rf", "bash -e -c 'rm -rf /'", MatchMode::Anywhere));
    assert!(hits(
        "rm -rf",
        "zsh -o errexit -c 'rm -rf /'",
        MatchMode::Anywhere
    ));
    let a = clean("dash -c 'ls'");
    assert!(a.commands[0].is_wrapper);
    assert_eq!(a.commands[1].words, ["ls"]);
}

#[test]
fn shell_without_c_runs_a_script_file() {
    let a = clean("bash script.sh");
    assert_eq!(a.commands.len(), 1);
    assert!(!a.commands[0].is_wrapper);
}

#[test]
fn non_literal_shell_body_is_unparsed() {
    let a = unparsed("bash -c \"$X\"");
    assert!(a.unparsed.iter().any(|r| r.contains("not a literal")));
}

#[test]
fn shell_reading_a_here_string_or_heredoc_is_analyzed() {
    assert!(hits("rm -rf", "bash <<< 'rm -rf /'", MatchMode::Anywhere));
    assert!(hits(
        "rm -rf",
        "sh <<'EOF'\nrm -rf /\nEOF",
        MatchMode::Anywhere
    ));
}

#[test]
fn substitution_in_program_name_is_unparsed() {
    let a = unparsed("$(echo rm) -rf /");
    assert!(a.commands.iter().all(|c| c.program() != "rm"));
    unparsed("`echo rm` -rf /");
    unparsed("$CMD -rf /");
    unparsed("${CMD} -rf /");
}

#[test]
fn substitution_in_assignment_is_unparsed_and_inner_reported() {
    let a = unparsed("x=$(whoami)");
    assert_eq!(a.commands[0].program(), "whoami");
}

#[test]
fn substitution_inside_double_quotes_is_unparsed() {
    let a = unparsed("echo \"today: $(rm -rf /)\"");
    assert!(a
        .commands
        .iter()
        .any(|c| pat("rm -rf").matches(c, MatchMode::Anywhere)));
}

#[test]
fn process_substitution_is_unparsed() {
    let a = unparsed("diff <(ls) <(rm -rf x)");
    assert!(a
        .unparsed
        .iter()
        .any(|r| r.contains("process substitution")));
    assert!(a.commands.iter().any(|c| c.program() == "rm"));
}

#[test]
fn heredoc_with_substitution_is_unparsed() {
    unparsed("cat <<EOF\n$(id)\nEOF");
    unparsed("cat <<EOF\n`id`\nEOF");
    unparsed("cat <<-EOF\n\t$HOME\n\tEOF");
}

#[test]
fn quoted_heredoc_is_data() {
    let a = clean("cat <<'EOF'\n$(rm -rf /)\nEOF");
    assert_eq!(programs("cat <<'EOF'\n$(rm -rf /)\nEOF"), ["cat"]);
    assert_eq!(a.commands.len(), 1);
}

#[test]
fn heredoc_keeps_the_rest_of_its_line() {
    let a = clean("cat <<EOF | rm -rf x\nhello\nEOF");
    assert_eq!(
        a.commands.iter().map(|c| c.program()).collect::<Vec<_>>(),
        ["cat", "rm"]
    );
}

#[test]
fn pipe_into_xargs_reports_wrapped_command() {
    assert_eq!(programs("ls | xargs rm -rf"), ["ls", "xargs", "rm"]);
    assert!(hits("rm -rf", "ls | xargs rm -rf", MatchMode::Anywhere));
}

#[test]
fn absolute_program_path_uses_basename() {
    let a = clean("/bin/rm -rf x");
    assert_eq!(a.commands[0].program(), "rm");
    assert!(hits("rm -rf", "/usr/bin/rm -rf x", MatchMode::Prefix));
}

#[test]
fn quoted_or_escaped_program_name_is_unquoted() {
    for s in ["\\rm -rf x", "r\\m -rf x", "\"rm\" -rf x", "'r'm -rf x"] {
        assert!(hits("rm -rf", s, MatchMode::Anywhere), "{s}");
    }
}

#[test]
fn prefix_and_anywhere_modes_differ_on_git_dash_c() {
    let c = cmd(&["git", "-C", "dir", "push"]);
    assert!(pat("git push").matches(&c, MatchMode::Anywhere));
    assert!(!pat("git push").matches(&c, MatchMode::Prefix));
    let s = cmd(&["git", "status", "--short"]);
    assert!(pat("git status").matches(&s, MatchMode::Prefix));
    assert!(!pat("git status").matches(&cmd(&["git", "log", "status"]), MatchMode::Prefix));
}

#[test]
fn git_push_force_aliases() {
    let p = pat("git push --force");
    for words in [
        &["git", "push", "--force"][..],
        &["git", "push", "-f", "origin"],
        &["git", "push", "--force-with-lease"],
        &["git", "push", "--force=origin"],
        &["git", "push", "origin", "+main"],
    ] {
        assert!(p.matches(&cmd(words), MatchMode::Anywhere), "{words:?}");
    }
    assert!(!p.matches(&cmd(&["git", "push", "origin"]), MatchMode::Anywhere));
    // -f means something else outside push.
    assert!(!p.matches(&cmd(&["git", "fetch", "-f"]), MatchMode::Anywhere));
}

#[test]
fn words_after_double_dash_are_positional() {
    assert!(!pat("rm -rf").matches(&cmd(&["rm", "--", "-rf"]), MatchMode::Anywhere));
    let a = clean("rm -- -rf");
    assert_eq!(a.commands[0].file_operands(), [("-rf", Access::Write)]);
}

#[test]
fn lone_dash_is_not_a_flag() {
    let c = cmd(&["cat", "-"]);
    assert!(pat("cat -").matches(&c, MatchMode::Prefix));
    assert_eq!(c.file_operands(), [("-", Access::Read)]);
}

#[test]
fn extra_flags_do_not_prevent_a_match_but_missing_ones_do() {
    assert!(pat("git push").matches(&cmd(&["git", "push", "-u", "origin"]), MatchMode::Prefix));
    assert!(!pat("ls -la").matches(&cmd(&["ls", "-l"]), MatchMode::Prefix));
}

#[test]
fn program_must_match_exactly() {
    assert!(!pat("rm").matches(&cmd(&["rmdir", "x"]), MatchMode::Anywhere));
    assert!(!pat("git push").matches(&cmd(&["gitk", "push"]), MatchMode::Anywhere));
    assert!(pat("mkfs").matches(&cmd(&["mkfs.ext4", "/dev/sda"]), MatchMode::Anywhere));
}

#[test]
fn redirect_to_file_is_write_and_fd_dup_is_not_a_file() {
    let a = clean("echo x > out.txt 2>&1");
    assert_eq!(
        a.commands[0].redirects,
        [("out.txt".to_string(), Access::Write)]
    );
    let a = clean("cat < in.txt >> log &> all >& both 1>&2 >&-");
    assert_eq!(
        a.commands[0].redirects,
        [
            ("in.txt".to_string(), Access::Read),
            ("log".to_string(), Access::Write),
            ("all".to_string(), Access::Write),
            ("both".to_string(), Access::Write),
        ]
    );
    assert!(a.commands[0].file_operands().is_empty());
}

#[test]
fn redirect_of_a_group_is_kept() {
    let a = clean("{ ls; } > .env");
    assert_eq!(
        a.commands[0].redirects,
        [(".env".to_string(), Access::Write)]
    );
}

#[test]
fn redirect_target_with_variable_is_unparsed() {
    unparsed("echo hi > \"$OUT\"");
}

#[test]
fn dev_null_is_reported() {
    let a = clean("ls 2>/dev/null");
    assert_eq!(
        a.commands[0].redirects,
        [("/dev/null".to_string(), Access::Write)]
    );
}

#[test]
fn find_with_several_exec_commands_reports_each() {
    // The second `-exec` was cut from the wrong command and panicked
    // (fuzz/regressions/shell_analyzer/find-two-exec-slice-panic).
    assert_eq!(
        programs("find . -exec ls {} \\; -exec rm -rf / \\;"),
        ["find", "ls", "rm"]
    );
}

#[test]
fn nul_script_is_unparsed() {
    unparsed("ls\0rm -rf /");
}

#[test]
fn parse_errors_are_unparsed() {
    let a = unparsed("echo \"unterminated");
    assert!(a.unparsed[0].contains("could not parse"));
    unparsed("{rm,-rf,/}");
    unparsed("ls &&");
}

#[test]
fn control_flow_bodies_and_conditions_are_split() {
    assert_eq!(
        programs("if rm -rf a; then ls; elif true; then :; else rm b; fi"),
        ["rm", "ls", "true", ":", "rm"]
    );
    assert_eq!(programs("while rm x; do ls; done"), ["rm", "ls"]);
    assert_eq!(programs("until rm x; do ls; done"), ["rm", "ls"]);
    assert_eq!(programs("for f in a b; do rm -rf x; done"), ["rm", "rm"]);
    assert_eq!(programs("case x in a) ls;; b|c) rm y;; esac"), ["ls", "rm"]);
    assert_eq!(programs("! rm x"), ["rm"]);
    assert_eq!(programs("(cd x && rm y) & { ls; }"), ["cd", "rm", "ls"]);
}

#[test]
fn all_list_operators_split() {
    assert_eq!(
        programs("a && b || c; d & e | f\ng"),
        ["a", "b", "c", "d", "e", "f", "g"]
    );
}

#[test]
fn test_commands_run_nothing_unless_substituting() {
    assert!(clean("[[ -f $x ]] && ls").commands.len() == 1);
    assert!(clean("[ -f x ]").commands.is_empty());
    let a = unparsed("[[ -f $(rm -rf /) ]]");
    assert!(a.commands.iter().any(|c| c.program() == "rm"));
}

#[test]
fn variable_in_argument_is_unparsed_with_reason() {
    let a = unparsed("rm $FLAGS x");
    assert!(a.unparsed[0].contains("$FLAGS"));
    assert!(a.unparsed[0].contains("-rf"));
    unparsed("cat \"$HOME\"");
    unparsed("echo $((1 + 2))");
}

#[test]
fn eval_alias_function_are_unparsed() {
    let a = unparsed("eval \"$X\"");
    assert!(a.unparsed.iter().any(|r| r.starts_with("eval")), "{a:?}");
    unparsed("alias ls='rm -rf'");
    unparsed("ls() { rm -rf /; }; ls");
    unparsed("sudo eval $X");
}

#[test]
fn brace_expansion_is_unparsed_but_find_braces_are_not() {
    unparsed("rm -{r,f} x");
    unparsed("touch a{1..3}");
    let a = clean("find . -name '*.o' -exec rm {} \\;");
    assert_eq!(
        a.commands.iter().map(|c| c.program()).collect::<Vec<_>>(),
        ["find", "rm"]
    );
    assert_eq!(a.commands[1].words, ["rm", "{}"]);
    clean("echo '{a,b}'");
}

#[test]
fn quote_removal_concatenates() {
    let a = clean("echo ab\"c\"d 'e f' g\\ h \"a\\\"b\\\\c\\$x\" \"\\n\"");
    assert_eq!(
        a.commands[0].words,
        ["echo", "abcd", "e f", "g h", "a\"b\\c$x", "\\n"]
    );
}

#[test]
fn ansi_c_strings_decode_simple_escapes_only() {
    let a = clean("printf $'a\\tb\\n'");
    assert_eq!(a.commands[0].words, ["printf", "a\tb\n"]);
    unparsed("$'\\x72m' -rf /");
    unparsed("$'\\162m' -rf /");
}

#[test]
fn globs_stay_literal_in_arguments_but_not_in_program() {
    let a = clean("ls *.rs src/?.rs");
    assert_eq!(a.commands[0].words, ["ls", "*.rs", "src/?.rs"]);
    unparsed("/bin/r? -rf x");
    clean("\"r*\" x");
}

#[test]
fn bare_assignment_yields_no_command() {
    assert!(clean("FOO=1").commands.is_empty());
    assert!(clean("A=1 B=2").commands.is_empty());
}

#[test]
fn code_loading_assignments_are_unparsed() {
    unparsed("PATH=/tmp/evil ls");
    unparsed("env LD_PRELOAD=./x.so ls");
    unparsed("PAGER=$X git log");
    unparsed("printf -v PAGER %s x; git log");
    clean("RUST_LOG=debug cargo test");
}

#[test]
fn command_variables_are_analyzed_as_commands() {
    assert_eq!(
        programs("GIT_EXTERNAL_DIFF='rm -rf /' git diff"),
        ["rm", "git"]
    );
    assert_eq!(
        programs("export PAGER='rm -rf /'; git log"),
        ["rm", "export", "git"]
    );
    assert_eq!(programs("env PAGER=cat git log"), ["cat", "env", "git"]);
    assert_eq!(programs("PAGER='less -R' git log"), ["less", "git"]);
}

#[test]
fn exec_options_run_their_values() {
    assert_eq!(programs("rg --pre 'rm -rf ~' x"), ["rg", "rm"]);
    assert_eq!(programs("git -c core.pager='rm -rf ~' log"), ["git", "rm"]);
    assert_eq!(programs("time -o out.txt ls"), ["time", "ls"]);
    assert_eq!(programs("find . -exec rm {} + -o -print"), ["find", "rm"]);
    let a = analyze("sort --compress-program=sh x");
    assert_eq!(a.unparsed.len(), 1, "{a:?}");
    let a = clean("sort -o out.txt x");
    assert_eq!(
        a.commands[0].redirects,
        [("out.txt".to_string(), Access::Write)]
    );
    let a = clean("git -c color.ui=always log");
    assert!(pat("git log").matches(&a.commands[0], MatchMode::Prefix));
    let a = clean("find . -name x -exec grep -l y {} ;");
    assert_eq!(
        a.commands[0].file_operands(),
        [(".", Access::Read), ("x", Access::Read)]
    );
}

#[test]
fn declaration_is_reported_without_file_operands() {
    let a = clean("export A=b");
    assert_eq!(a.commands[0].words, ["export", "A=b"]);
    assert!(a.commands[0].file_operands().is_empty());
    unparsed("local d=$(id)");
}

#[test]
fn file_operands_access() {
    let c = cmd(&["cat", "-n", "--file=a.txt", "b.txt"]);
    assert_eq!(
        c.file_operands(),
        [("a.txt", Access::Read), ("b.txt", Access::Read)]
    );
    let c = cmd(&["cp", "a", "b"]);
    assert_eq!(
        c.file_operands(),
        [("a", Access::Write), ("b", Access::Write)]
    );
    let c = cmd(&["sed", "-i.bak", "s/a/b/", "f"]);
    assert!(c.file_operands().contains(&("f", Access::Write)));
    let c = cmd(&["sed", "-n", "p", "f"]);
    assert!(c.file_operands().contains(&("f", Access::Read)));
    let c = cmd(&["dd", "if=a", "of=b", "bs=1M"]);
    assert_eq!(
        c.file_operands(),
        [("a", Access::Read), ("b", Access::Write)]
    );
    assert!(cmd(&["echo", "/etc/passwd"]).file_operands().is_empty());
    let c = cmd(&["tee", "-a", "log"]);
    assert_eq!(c.file_operands(), [("log", Access::Write)]);
}

#[test]
fn env_split_string_is_unparsed() {
    unparsed("env -S 'rm -rf /'");
}

#[test]
fn pattern_parse_errors_explain() {
    assert!(CommandPattern::parse("").unwrap_err().contains("empty"));
    assert!(CommandPattern::parse("   ").unwrap_err().contains("empty"));
    let e = CommandPattern::parse("ls && rm").unwrap_err();
    assert!(e.contains("one simple command per entry"), "{e}");
    assert!(CommandPattern::parse("ls | wc").is_err());
    assert!(CommandPattern::parse("ls; rm").is_err());
    assert!(CommandPattern::parse("echo 'oops")
        .unwrap_err()
        .contains("close"));
    assert!(CommandPattern::parse("rm $X").is_err());
    assert!(CommandPattern::parse("-rf").is_err());
}

#[test]
fn pattern_quotes_and_text() {
    let p = pat("git commit -m 'wip now'");
    assert_eq!(p.as_str(), "git commit -m 'wip now'");
    assert!(p.matches(&cmd(&["git", "commit", "-m", "wip now"]), MatchMode::Prefix));
    assert!(!p.matches(&cmd(&["git", "commit", "-m", "wip"]), MatchMode::Prefix));
    let p = pat("/bin/rm -rf");
    assert!(p.matches(&cmd(&["rm", "-rf", "x"]), MatchMode::Anywhere));
}

#[test]
fn anywhere_keeps_order() {
    let p = pat("git push origin");
    assert!(p.matches(
        &cmd(&["git", "-C", "d", "push", "x", "origin"]),
        MatchMode::Anywhere
    ));
    assert!(!p.matches(&cmd(&["git", "origin", "push"]), MatchMode::Anywhere));
}

#[test]
fn printf_and_grep_arguments_are_not_commands() {
    assert_eq!(programs("printf '%s\\n' 'curl x'"), ["printf"]);
    assert_eq!(programs("grep -r \"sudo\" src"), ["grep"]);
    assert!(!hits("sudo", "echo sudo", MatchMode::Anywhere));
}

#[test]
fn arithmetic_command_is_unparsed_not_dropped() {
    unparsed("((x++))");
    unparsed("for ((i=$(id);i<3;i++)); do ls; done");
    assert_eq!(programs("for ((i=0;i<3;i++)); do rm x; done"), ["rm"]);
}

//! Unit tests for the interpreter-code reader and its wiring into the
//! analyzer (`python -c`, `node -e`, heredocs and pipes into interpreters).

use super::inline::{read, Effect, Lang};
use super::*;

fn shells(lang: Lang, code: &str) -> Vec<String> {
    read(lang, code)
        .effects
        .into_iter()
        .filter_map(|e| match e {
            Effect::Shell(s) => Some(s),
            Effect::Argv(a) => Some(a.join(" ")),
            Effect::File(..) => None,
        })
        .collect()
}

fn known(lang: Lang, code: &str) -> bool {
    read(lang, code).unknown.is_empty()
}

#[test]
fn python_shell_calls_are_extracted() {
    assert_eq!(
        shells(Lang::Python, "import os; os.system('rm -rf /')"),
        ["rm -rf /"]
    );
    assert_eq!(
        shells(
            Lang::Python,
            "import subprocess\nsubprocess.run(['git', 'reset', '--hard'], check=True)"
        ),
        ["git reset --hard"]
    );
    assert_eq!(
        shells(Lang::Python, "import shutil; shutil.rmtree('build')"),
        ["rm -rf -- build"]
    );
    assert_eq!(
        shells(Lang::Python, "from pathlib import Path; Path('x').unlink()"),
        ["rm -- x"]
    );
    assert!(known(Lang::Python, "import os; os.system('ls')"));
}

#[test]
fn python_non_literal_or_unknown_code_is_unknown() {
    assert!(!known(Lang::Python, "import os; os.system('rm ' + x)"));
    assert!(!known(Lang::Python, "import os; os.system(f'rm {x}')"));
    assert!(!known(Lang::Python, "import os; os.system('\\x72m -rf /')"));
    assert!(!known(Lang::Python, "import ctypes"));
    assert!(!known(Lang::Python, "__import__('os').system('ls')"));
    assert!(!known(Lang::Python, "f = getattr(os, 'system'); f('ls')"));
    assert!(!known(Lang::Python, "exec('print(1)')"));
    assert!(known(Lang::Python, "print(len('abc'))"));
    assert!(known(
        Lang::Python,
        "import json,sys; print(json.dumps({'a': 1}))"
    ));
}

#[test]
fn python_open_modes() {
    let r = read(
        Lang::Python,
        "open('a.txt', 'w').write('x'); print(open('b.txt').read())",
    );
    assert!(r.unknown.is_empty(), "{:?}", r.unknown);
    assert_eq!(
        r.effects,
        [
            Effect::File("a.txt".into(), Access::Write),
            Effect::File("b.txt".into(), Access::Read)
        ]
    );
}

#[test]
fn javascript_child_process_and_fs() {
    assert_eq!(
        shells(
            Lang::Js,
            "require('child_process').execSync('git reset --hard')"
        ),
        ["git reset --hard"]
    );
    assert_eq!(
        shells(
            Lang::Js,
            "const cp = require('node:child_process'); cp.spawnSync('rm', ['-rf', 'x'])"
        ),
        ["rm -rf x"]
    );
    assert_eq!(
        shells(
            Lang::Js,
            "require('fs').rmSync('dist', {recursive: true, force: true})"
        ),
        ["rm -rf -- dist"]
    );
    assert_eq!(
        shells(Lang::Js, "require('fs').unlinkSync('a')"),
        ["rm -- a"]
    );
    assert!(!known(Lang::Js, "require('child_process').execSync(cmd)"));
    assert!(!known(
        Lang::Js,
        "require('child_process')['exec' + 'Sync']('ls')"
    ));
    assert!(!known(Lang::Js, "new Function('return 1')()"));
    assert!(!known(Lang::Js, "require('./evil')"));
    assert!(!known(Lang::Js, "eval('1')"));
    assert!(known(Lang::Js, "console.log(JSON.stringify({a: 1}))"));
    assert!(known(Lang::Js, "console.log('a/b'.split('/'))"));
}

#[test]
fn ruby_perl_php_shell_forms() {
    assert_eq!(shells(Lang::Ruby, "system('rm -rf /')"), ["rm -rf /"]);
    assert_eq!(shells(Lang::Ruby, "system 'rm', '-rf', 'x'"), ["rm -rf x"]);
    assert_eq!(shells(Lang::Ruby, "puts `ls`"), ["ls"]);
    assert_eq!(shells(Lang::Ruby, "puts %x(git status)"), ["git status"]);
    assert_eq!(
        shells(Lang::Ruby, "require 'fileutils'; FileUtils.rm_rf('tmp')"),
        ["rm -rf -- tmp"]
    );
    assert!(!known(Lang::Ruby, "Kernel.send(:system, 'ls')"));
    assert!(!known(Lang::Ruby, "system(\"rm #{x}\")"));
    assert_eq!(shells(Lang::Perl, "system(\"rm -rf /\")"), ["rm -rf /"]);
    assert_eq!(shells(Lang::Perl, "print qx(id)"), ["id"]);
    assert_eq!(shells(Lang::Perl, "print `id`"), ["id"]);
    assert_eq!(shells(Lang::Perl, "unlink 'a', 'b'"), ["rm -- a b"]);
    assert_eq!(
        shells(Lang::Perl, "open(my $f, '-|', 'git log') or die"),
        ["git log"]
    );
    assert!(!known(Lang::Perl, "system($cmd)"));
    assert!(known(Lang::Perl, "print \"hi\\n\""));
    assert!(known(Lang::Perl, "while (<>) { s/foo/bar/g; print }"));
    assert!(!known(Lang::Perl, "s/x/system('id')/e"));
    assert_eq!(shells(Lang::Php, "system('rm -rf /');"), ["rm -rf /"]);
    assert_eq!(shells(Lang::Php, "echo shell_exec('id');"), ["id"]);
    assert_eq!(shells(Lang::Php, "echo `id`;"), ["id"]);
    assert!(!known(Lang::Php, "$f = 'system'; $f('id');"));
}

#[test]
fn broken_code_is_unknown() {
    assert!(!known(Lang::Python, "os.system('rm -rf /"));
    assert!(!known(Lang::Js, "execSync(`rm ${x}`)"));
}

fn analyzed(script: &str) -> ShellAnalysis {
    analyze(script)
}

fn has(script: &str, words: &str) -> bool {
    analyzed(script)
        .commands
        .iter()
        .any(|c| c.words.join(" ") == words)
}

#[test]
fn interpreter_invocations_are_read() {
    assert!(has(
        "python3 -c \"import os; os.system('rm -rf /')\"",
        "rm -rf /"
    ));
    assert!(has("python -Ic 'import os; os.system(\"ls\")'", "ls"));
    assert!(has(
        "node -e \"require('child_process').execSync('git reset --hard')\"",
        "git reset --hard"
    ));
    assert!(has(
        "node -p \"require('child_process').execSync('id')\"",
        "id"
    ));
    assert!(has("ruby -e 'system(\"rm -rf x\")'", "rm -rf x"));
    assert!(has("perl -e 'system(\"rm -rf x\")'", "rm -rf x"));
    assert!(has("perl -Mstrict -we 'system(\"rm -rf x\")'", "rm -rf x"));
    assert!(has("php -r 'system(\"rm -rf x\");'", "rm -rf x"));
    assert!(has(
        "deno eval \"Deno.run\" ; bun -e 'require(\"child_process\").execSync(\"id\")'",
        "id"
    ));
    assert!(has(
        "python3 <<'EOF'\nimport os\nos.system('rm -rf x')\nEOF",
        "rm -rf x"
    ));
    assert!(has(
        "echo \"import os; os.system('rm -rf x')\" | python3",
        "rm -rf x"
    ));
    assert!(has(
        "python3 - <<< \"import shutil; shutil.rmtree('x')\"",
        "rm -rf -- x"
    ));
    // Not inline code: a script file, a module.
    assert!(analyzed("python3 script.py").inline_code.is_empty());
    assert!(analyzed("python -m pytest -c pytest.ini")
        .inline_code
        .is_empty());
    assert!(analyzed("perl script.pl -e x").inline_code.is_empty());
    // Non-literal code on stdin is unknown.
    assert!(!analyzed("cat x.py | python3").inline_code.is_empty());
    assert!(!analyzed("python3 -c 'import ctypes'")
        .inline_code
        .is_empty());
}

#[test]
fn eval_and_pipes_into_shells_are_analyzed() {
    assert!(has("eval 'rm -rf /'", "rm -rf /"));
    assert!(analyzed("eval 'rm -rf /'").unparsed.is_empty());
    assert!(!analyzed("eval \"$X\"").unparsed.is_empty());
    assert!(has("echo 'rm -rf /' | bash", "rm -rf /"));
    assert!(has(
        "printf '%s\\n' 'git reset --hard' | sh",
        "git reset --hard"
    ));
    assert!(has("echo 'rm -rf /' | sudo bash", "rm -rf /"));
    assert!(!analyzed("cat script | bash").unparsed.is_empty());
    assert!(!analyzed("echo \"$X\" | sh").unparsed.is_empty());
    assert!(!analyzed("bash <<< \"$X\"").unparsed.is_empty());
}

#[test]
fn find_delete_is_rm_rf_of_its_start_points() {
    assert!(has("find . -name '*.o' -delete", "rm -rf -- ."));
    assert!(has(
        "find -L build tmp -type f -delete",
        "rm -rf -- build tmp"
    ));
    assert!(!has("find . -name '*.o'", "rm -rf -- ."));
}

#[test]
fn print_only_commands_may_hold_variables() {
    assert!(analyzed("echo \"$HOME\"").unparsed.is_empty());
    assert!(analyzed("echo ${USER:-me} $1").unparsed.is_empty());
    assert!(analyzed("printf '%s\\n' \"$X\"").unparsed.is_empty());
    assert!(!analyzed("echo \"$HOME\" > f").unparsed.is_empty());
    assert!(!analyzed("{ echo $X; } > f").unparsed.is_empty());
    assert!(!analyzed("printf -v out '%s' \"$X\"").unparsed.is_empty());
    assert!(!analyzed("printf \"$FMT\" x").unparsed.is_empty());
    assert!(!analyzed("echo $((X))").unparsed.is_empty());
    assert!(!analyzed("echo ${X@P}").unparsed.is_empty());
    assert!(!analyzed("rm \"$HOME\"").unparsed.is_empty());
}

#[test]
fn for_loops_bind_literal_values() {
    let a = analyzed("for d in build dist; do rm -rf \"$d\"; done");
    assert!(a.unparsed.is_empty(), "{:?}", a.unparsed);
    let words: Vec<String> = a.commands.iter().map(|c| c.words.join(" ")).collect();
    assert_eq!(words, ["rm -rf build", "rm -rf dist"]);
    assert!(has("for c in ls rm; do $c -rf /; done", "rm -rf /"));
    assert!(!analyzed("for f in *.txt; do rm $f; done")
        .unparsed
        .is_empty());
    assert!(!analyzed("for f in \"a b\"; do rm $f; done")
        .unparsed
        .is_empty());
    assert!(!analyzed("for f in a; do :; done; rm $f")
        .unparsed
        .is_empty());
}

#[test]
fn known_variables_are_substituted() {
    let mut vars = KnownVariables::default();
    vars.values.insert("TMPDIR".into(), "/tmp/t".into());
    vars.unset.push("CACHE".into());
    let a = analyze_vars(
        "rm -rf $TMPDIR/x ${CACHE:-/tmp/c} ${TMPDIR}",
        ShellLimits::default(),
        &ExecRules::default(),
        &vars,
    );
    assert!(a.unparsed.is_empty(), "{:?}", a.unparsed);
    assert_eq!(
        a.commands[0].words,
        ["rm", "-rf", "/tmp/t/x", "/tmp/c", "/tmp/t"]
    );
    let b = analyze_vars(
        "rm -rf $CACHE",
        ShellLimits::default(),
        &ExecRules::default(),
        &vars,
    );
    assert!(!b.unparsed.is_empty());
    let c = analyze_vars(
        "rm -rf ${CACHE:-$(id)}",
        ShellLimits::default(),
        &ExecRules::default(),
        &vars,
    );
    assert!(!c.unparsed.is_empty());
}

#[test]
fn literal_double_dash_and_exact_patterns() {
    let p = CommandPattern::parse("git checkout --").unwrap();
    let cmd = |s: &str| analyze(s).commands.remove(0);
    assert!(p.matches(&cmd("git checkout -- src/a.rs"), MatchMode::Anywhere));
    assert!(p.matches(&cmd("git checkout HEAD -- a"), MatchMode::Anywhere));
    assert!(!p.matches(&cmd("git checkout feature"), MatchMode::Anywhere));
    assert!(p.has_double_dash());
    // Patterns without `--` ignore one in the command.
    let allow = CommandPattern::parse("git checkout").unwrap();
    assert!(allow.matches(&cmd("git checkout -- a"), MatchMode::Prefix));
    let exact = CommandPattern::parse_with("git push --force", true).unwrap();
    assert!(exact.matches(&cmd("git push --force origin"), MatchMode::Anywhere));
    assert!(!exact.matches(&cmd("git push --force-with-lease"), MatchMode::Anywhere));
    assert!(!exact.matches(&cmd("git push -f"), MatchMode::Anywhere));
    assert!(!exact.matches(&cmd("git push origin +main"), MatchMode::Anywhere));
    let folded = CommandPattern::parse("git push --force").unwrap();
    assert!(folded.matches(&cmd("git push --force-with-lease"), MatchMode::Anywhere));
    assert_eq!(folded.fold_policy_flag("-f").as_deref(), Some("--force"));
    assert_eq!(exact.fold_policy_flag("-f").as_deref(), Some("-f"));
    assert_eq!(folded.fold_policy_flag("-rf"), None);
}

#[test]
fn su_script_chroot_flock_sudo_shell() {
    assert!(has("su -c 'rm -rf /' root", "rm -rf /"));
    assert!(has(
        "script -q -c 'git reset --hard' /dev/null",
        "git reset --hard"
    ));
    assert!(has("chroot /srv/root rm -rf /", "rm -rf /"));
    assert!(has("flock /tmp/lock rm -rf x", "rm -rf x"));
    assert!(!analyzed("flock /tmp/lock -c 'rm -rf x'")
        .unparsed
        .is_empty());
    assert!(!analyzed("sudo -s 'rm -rf /'").unparsed.is_empty());
    assert!(!analyzed("sudo -Es rm -rf /").unparsed.is_empty());
    assert!(has("sudo -u admin rm -rf x", "rm -rf x"));
    assert!(analyzed("sudo -u admin rm -rf x").unparsed.is_empty());
}

#[test]
fn nested_loops_are_bounded() {
    let values = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16";
    let script = format!(
        "for a in {values}; do for b in {values}; do for c in {values}; do echo $a$b$c; done; done; done"
    );
    let started = std::time::Instant::now();
    let a = analyze(&script);
    // 64 passes at most, then the loop variable is unknown (echo may hold it).
    assert!(a.commands.len() <= 64 * 16 + 16, "{}", a.commands.len());
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    let b = analyze(&format!(
        "for a in {values}; do for b in {values}; do for c in {values}; do rm $a$b$c; done; done; done"
    ));
    assert!(!b.unparsed.is_empty());
}

#[test]
fn a_pipeline_fed_by_a_heredoc_command_is_not_literal() {
    assert!(!analyze("cat <<EOF | bash\nrm -rf /\nEOF")
        .unparsed
        .is_empty());
    assert!(!analyze("cat <<'EOF' | python3\nimport ctypes\nEOF")
        .inline_code
        .is_empty());
    assert!(analyze("cat <<EOF | grep x\nhello\nEOF")
        .unparsed
        .is_empty());
}

//! Unit tests for the exec table and its scanner.

use super::*;
use crate::policy::shell::scan::*;

#[test]
fn the_shipped_table_loads_and_matches_its_yaml() {
    let yaml: serde_yaml::Value = serde_yaml::from_str(include_str!("exec_table.yaml")).unwrap();
    let json: serde_yaml::Value = serde_json::from_str(TABLE_JSON).unwrap();
    assert_eq!(json, yaml);
    let table = builtin();
    assert!(table.program("sort").is_some());
    assert!(table.program("nvim").is_some(), "aliases resolve");
}

#[test]
fn every_flags_target_and_alias_exists() {
    let table = builtin();
    fn targets(spec: &ProgramSpec, out: &mut Vec<String>) {
        let kinds = spec
            .options
            .values()
            .chain(spec.config.values())
            .chain(spec.assignments.values());
        for kind in kinds {
            if let ValueKind::Flags(t) = kind {
                out.push(t.clone());
            }
        }
        for sub in spec.subcommands.values() {
            targets(sub, out);
        }
    }
    let mut all = Vec::new();
    for spec in table.programs.values() {
        targets(spec, &mut all);
    }
    for (name, kind) in table
        .env
        .exact
        .iter()
        .chain(table.env.prefixes.iter().map(|(p, k)| (p, k)))
    {
        if let ValueKind::Flags(t) = kind {
            all.push(t.clone());
        }
        assert!(!name.is_empty());
    }
    for t in all {
        assert!(table.program(&t).is_some(), "flags:{t} names no entry");
    }
    for (alias, target) in &table.aliases {
        assert!(
            table.programs.contains_key(target),
            "alias {alias} -> {target}"
        );
    }
}

#[test]
fn glob_keys() {
    assert!(glob_match("diff.*.command", "diff.foo.command"));
    assert!(glob_match("target.*.runner", "target.'cfg(unix)'.runner"));
    assert!(!glob_match("diff.*.command", "diff.command"));
    assert!(glob_match("alias.*", "alias.x"));
    assert!(!glob_match("alias.*", "aliasx"));
}

fn scan(words: &[&str]) -> Scan {
    let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    let literal = vec![true; words.len()];
    let rules = ExecRules::default();
    Scanner { rules: &rules }
        .scan(&words[0], &words, &literal, words.len())
        .expect("program has an entry")
}

fn runs(words: &[&str]) -> Vec<String> {
    scan(words)
        .hatches
        .into_iter()
        .filter_map(|h| match h {
            Hatch::Run { value, .. } => Some(value),
            _ => None,
        })
        .collect()
}

#[test]
fn option_spellings() {
    assert_eq!(runs(&["sort", "--compress-program=sh", "x"]), ["sh"]);
    assert_eq!(runs(&["sort", "--compress-program", "sh", "x"]), ["sh"]);
    assert_eq!(
        runs(&["sort", "--compress-prog=sh", "x"]),
        ["sh"],
        "abbreviated"
    );
    assert_eq!(runs(&["rg", "--pre", "rm -rf ~", "x"]), ["rm -rf ~"]);
    assert_eq!(runs(&["tar", "-cI", "sh", "-f", "a.tar", "x"]), ["sh"]);
    assert_eq!(runs(&["tar", "-cIsh", "x"]), ["sh"]);
    assert_eq!(runs(&["go", "test", "-exec=rm -rf ~"]), ["rm -rf ~"]);
    assert_eq!(runs(&["go", "test", "-toolexec", "x"]), ["x"]);
    assert!(runs(&["sort", "-u", "x"]).is_empty());
    assert!(runs(&["rg", "foo"]).is_empty());
}

#[test]
fn git_config_keys_and_subcommands() {
    assert_eq!(
        runs(&["git", "-c", "core.pager=less -R", "log"]),
        ["less -R"]
    );
    assert_eq!(
        runs(&["git", "-c", "Core.Pager=x", "log"]),
        ["x"],
        "keys ignore case"
    );
    assert_eq!(runs(&["git", "-c", "alias.l=!rm -rf ~", "l"]), ["rm -rf ~"]);
    assert!(runs(&["git", "-c", "alias.l=log", "l"]).is_empty());
    assert!(runs(&["git", "-c", "color.ui=always", "log"]).is_empty());
    assert_eq!(runs(&["git", "-C", "sub", "difftool", "-x", "sh"]), ["sh"]);
    let s = scan(&["git", "-C", "d", "-c", "color.ui=always", "log"]);
    assert_eq!(s.option_values, [2, 4]);
    let s = scan(&["git", "--config-env=core.pager=EVIL", "log"]);
    assert!(matches!(s.hatches[..], [Hatch::Opaque(_)]));
    let s = scan(&["git", "log", "--output=Cargo.lock"]);
    assert!(matches!(&s.hatches[..], [Hatch::Write { value, .. }] if value == "Cargo.lock"));
}

#[test]
fn find_exec_is_argv_and_writes_are_found() {
    let s = scan(&["find", ".", "-exec", "rm", "{}", ";", "-fprint", "out"]);
    assert_eq!(s.run_words, vec![std::ops::Range { start: 3, end: 5 }]);
    assert!(s.hatches.contains(&Hatch::Argv(3..5)));
    assert!(s
        .hatches
        .iter()
        .any(|h| matches!(h, Hatch::Write { value, .. } if value == "out")));
}

#[test]
fn cargo_config_values_are_toml() {
    assert_eq!(
        runs(&["cargo", "build", "--config", "build.rustc-wrapper=\"rm\""]),
        ["rm"]
    );
    let s = scan(&["cargo", "build", "--config", "extra.toml"]);
    assert!(matches!(s.hatches[..], [Hatch::Opaque(_)]));
    assert!(runs(&["cargo", "build", "--release"]).is_empty());
}

#[test]
fn make_assignments_and_flags() {
    assert_eq!(runs(&["make", "SHELL=rm -rf ~"]), ["rm -rf ~"]);
    assert_eq!(runs(&["make", "MAKEFLAGS=SHELL=sh"]), ["sh"]);
    assert!(runs(&["make", "test", "VERBOSE=1"]).is_empty());
    let s = scan(&["make", "--eval=x:;rm"]);
    assert!(matches!(s.hatches[..], [Hatch::Opaque(_)]));
}

#[test]
fn python_dispatches_to_the_module() {
    let s = scan(&["python", "-m", "pytest", "--basetemp=src"]);
    assert!(matches!(&s.hatches[..], [Hatch::Write { value, .. }] if value == "src"));
    assert!(scan(&["python", "-m", "pytest", "-c", "x.ini"])
        .hatches
        .is_empty());
}

#[test]
fn variables() {
    let rules = ExecRules::default();
    let s = Scanner { rules: &rules };
    assert!(s.variable("FOO", Some(("x", true))).is_empty());
    assert!(s.variable("GIT_AUTHOR_NAME", Some(("x", true))).is_empty());
    assert!(matches!(
        s.variable("LD_PRELOAD", Some(("x", true)))[..],
        [Hatch::Opaque(_)]
    ));
    assert!(matches!(
        &s.variable("PAGER", Some(("less", true)))[..],
        [Hatch::Run { value, program: false, .. }] if value == "less"
    ));
    assert!(matches!(
        &s.variable("GOFLAGS", Some(("-toolexec=rm", true)))[..],
        [Hatch::Run { value, program: true, .. }] if value == "rm"
    ));
}

#[test]
fn a_policy_adds_options() {
    let mut rules = ExecRules::default();
    rules.add_options("mytool", [("--hook".to_string(), ValueKind::Program)]);
    rules.add_options("sort", [("--my-hook".to_string(), ValueKind::Command)]);
    let s = Scanner { rules: &rules };
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let w = words(&["mytool", "--hook=x"]);
    assert_eq!(
        s.scan("mytool", &w, &[true, true], 2)
            .unwrap()
            .hatches
            .len(),
        1
    );
    let w = words(&["sort", "--compress-program=sh", "--my-hook", "y"]);
    assert_eq!(s.scan("sort", &w, &[true; 4], 4).unwrap().hatches.len(), 2);
}

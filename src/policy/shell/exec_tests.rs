//! Unit tests for the exec table and its scanner.

use super::*;
use crate::policy::shell::scan::*;

/// The kind named in the YAML, as build.rs spells it.
fn kind_name(kind: &ValueKind) -> String {
    match kind {
        ValueKind::Command => "command".into(),
        ValueKind::Program => "program".into(),
        ValueKind::BangCommand => "bang_command".into(),
        ValueKind::Opaque => "opaque".into(),
        ValueKind::Write => "write".into(),
        ValueKind::Argv => "argv".into(),
        ValueKind::Variable => "variable".into(),
        ValueKind::Config => "config".into(),
        ValueKind::ConfigOrFile => "config_or_file".into(),
        ValueKind::ConfigEnv => "config_env".into(),
        ValueKind::Flags(t) => format!("flags:{t}"),
        ValueKind::Plain => "plain".into(),
    }
}

/// An entry back as the YAML would write it (defaults left out).
fn to_json(spec: &ProgramSpec) -> serde_json::Value {
    use serde_json::{json, Map, Value};
    let mut m = Map::new();
    let pairs = |list: &mut dyn Iterator<Item = (&str, &ValueKind)>| -> Value {
        Value::Object(
            list.map(|(k, v)| (k.to_string(), json!(kind_name(v))))
                .collect(),
        )
    };
    if !spec.options.is_empty() || spec.subcommands.is_empty() {
        m.insert(
            "options".into(),
            pairs(&mut spec.options.iter().map(|(k, v)| (k.as_ref(), v))),
        );
    }
    if !spec.takes_value.is_empty() {
        m.insert("takes_value".into(), json!(spec.takes_value));
    }
    if spec.abbrev {
        m.insert("abbrev".into(), json!(true));
    }
    if !spec.grouping {
        m.insert("grouping".into(), json!(false));
    }
    if !spec.config.is_empty() {
        m.insert(
            "config".into(),
            pairs(&mut spec.config.iter().map(|(k, v)| (*k, v))),
        );
    }
    if !spec.assignments.is_empty() {
        m.insert(
            "assignments".into(),
            pairs(&mut spec.assignments.iter().map(|(k, v)| (*k, v))),
        );
    }
    if let Some(k) = &spec.operands {
        m.insert("operands".into(), json!(kind_name(k)));
    }
    if !spec.write_operands.is_empty() {
        m.insert("write_operands".into(), json!(spec.write_operands));
    }
    if !spec.dispatch.is_empty() {
        m.insert("dispatch".into(), json!(spec.dispatch));
    }
    if !spec.subcommands.is_empty() {
        let subs = spec
            .subcommands
            .iter()
            .map(|(k, v)| (k.to_string(), to_json(v)));
        m.insert("subcommands".into(), Value::Object(subs.collect()));
    }
    Value::Object(m)
}

/// Drops what `to_json` leaves out: empty option maps.
fn normalize(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, v)| {
                    !(k.as_str() == "options" && v.as_object().is_some_and(|o| o.is_empty()))
                })
                .map(|(k, v)| (k.clone(), normalize(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn the_shipped_table_is_its_yaml() {
    let yaml: serde_json::Value = serde_yaml::from_str(include_str!("exec_table.yaml")).unwrap();
    let programs = yaml["programs"].as_object().unwrap();
    assert_eq!(programs.len(), shipped::PROGRAMS.len());
    for (name, spec) in shipped::PROGRAMS {
        assert_eq!(
            normalize(&to_json(spec)),
            normalize(&programs[*name]),
            "{name}"
        );
    }
    let env = yaml["env"].as_object().unwrap();
    assert_eq!(
        env.len(),
        shipped::ENV_EXACT.len() + shipped::ENV_PREFIXES.len()
    );
    for (name, kind) in shipped::ENV_EXACT {
        assert_eq!(
            env[*name].as_str(),
            Some(kind_name(kind).as_str()),
            "{name}"
        );
    }
    for (prefix, kind) in shipped::ENV_PREFIXES {
        assert_eq!(
            env[&format!("{prefix}*")].as_str(),
            Some(kind_name(kind).as_str()),
            "{prefix}*"
        );
    }
    assert!(shipped_program("sort").is_some());
    assert!(
        shipped_program(canonical("nvim")).is_some(),
        "aliases resolve"
    );
    assert!(shipped_program("ls").is_none());
}

#[test]
fn lookups_are_sorted_for_binary_search() {
    assert!(shipped::ALIASES.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(shipped::PROGRAMS.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(shipped::ENV_EXACT.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(shipped::ENV_PREFIXES
        .windows(2)
        .all(|w| w[0].0.len() >= w[1].0.len()));
    assert_eq!(
        shipped_env("CARGO_TARGET_X_RUNNER"),
        Some(&ValueKind::Opaque)
    );
    assert_eq!(shipped_env("CARGO_TARGET_DIR"), Some(&ValueKind::Write));
    assert_eq!(
        shipped_env("CARGO_PROFILE_DEV_OPT_LEVEL"),
        Some(&ValueKind::Plain)
    );
    assert_eq!(shipped_env("FOO"), None);
}

#[test]
fn every_flags_target_and_alias_exists() {
    fn targets(spec: &ProgramSpec, out: &mut Vec<String>) {
        let kinds = spec
            .options
            .iter()
            .map(|(_, k)| k)
            .chain(spec.config.iter().map(|(_, k)| k))
            .chain(spec.assignments.iter().map(|(_, k)| k));
        for kind in kinds {
            if let ValueKind::Flags(t) = kind {
                out.push(t.to_string());
            }
        }
        for (_, sub) in spec.subcommands {
            targets(sub, out);
        }
    }
    let mut all = Vec::new();
    for (_, spec) in shipped::PROGRAMS {
        targets(spec, &mut all);
    }
    for (_, kind) in shipped::ENV_EXACT.iter().chain(shipped::ENV_PREFIXES) {
        if let ValueKind::Flags(t) = kind {
            all.push(t.to_string());
        }
    }
    for t in all {
        assert!(shipped_program(&t).is_some(), "flags:{t} names no entry");
    }
    for (alias, target) in shipped::ALIASES {
        assert!(
            shipped_program(target).is_some(),
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

//! Commands that run other commands: wrappers (`env`, `sudo`, `timeout`,
//! `xargs`, …) whose wrapped command is found by skipping their options, and
//! shells given `-c BODY` or a script on stdin. Options and variables that
//! run a command (`find -exec`, `PAGER`) are data: see `exec_table.yaml`.

use super::is_flag;

/// Programs that run a script given with `-c` or on stdin.
const SHELLS: &[&str] = &["bash", "sh", "dash", "zsh", "ksh"];

/// What a shell invocation runs.
pub(super) enum ShellRun {
    /// `bash -c BODY`: the index of BODY among the words.
    Body(usize),
    /// `bash` with no script operand: reads its script from stdin.
    Stdin,
    /// `bash script.sh` and the like: runs a file we cannot see.
    Other,
}

/// Classifies a shell invocation by skipping its options; None when
/// `program` is not a shell.
pub(super) fn shell_invocation(program: &str, words: &[String]) -> Option<ShellRun> {
    if !SHELLS.contains(&program) {
        return None;
    }
    let mut run_body = false;
    let mut i = 1;
    while i < words.len() {
        let word = words[i].as_str();
        if word == "--" || word == "-" {
            i += 1;
            break;
        }
        if matches!(word, "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if word.starts_with("--") {
            i += 1;
            continue;
        }
        if (word.starts_with('-') || word.starts_with('+')) && word.len() > 1 {
            let letters = &word[1..];
            if word.starts_with('-') && letters.contains('c') {
                run_body = true;
            }
            // `-o NAME` / `-O NAME` take the next word.
            i += if letters.contains(['o', 'O']) { 2 } else { 1 };
            continue;
        }
        break;
    }
    Some(match words.get(i) {
        Some(_) if run_body => ShellRun::Body(i),
        None if !run_body => ShellRun::Stdin,
        _ => ShellRun::Other,
    })
}

/// Where a wrapper's wrapped command starts, if `program` is a wrapper.
pub(super) enum Unwrapped {
    NotWrapper,
    /// The wrapped command starts at `words[start]`; `assignments` are the
    /// indices of the `NAME=value` words the wrapper sets for it.
    Inner {
        start: usize,
        assignments: Vec<usize>,
    },
    /// A wrapper used in a way whose wrapped command we cannot find.
    Unknown(String),
}

/// Option syntax of one wrapper: which short letters and long options take a
/// value, and how many operands precede the wrapped command.
struct WrapperSpec {
    name: &'static str,
    short_with_value: &'static str,
    long_with_value: &'static [&'static str],
    /// `env` takes `VAR=value` words before the command.
    assignments: bool,
    /// `timeout` takes a DURATION before the command.
    leading_operands: usize,
    /// Options that make the wrapper run something we cannot see.
    opaque: &'static [&'static str],
}

const WRAPPERS: &[WrapperSpec] = &[
    WrapperSpec {
        name: "env",
        short_with_value: "uCS",
        long_with_value: &["--unset", "--chdir", "--split-string"],
        assignments: true,
        leading_operands: 0,
        opaque: &["-S", "--split-string"],
    },
    WrapperSpec {
        name: "timeout",
        short_with_value: "sk",
        long_with_value: &["--signal", "--kill-after"],
        assignments: false,
        leading_operands: 1,
        opaque: &[],
    },
    WrapperSpec {
        name: "nice",
        short_with_value: "n",
        long_with_value: &["--adjustment"],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "nohup",
        short_with_value: "",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "command",
        short_with_value: "",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "builtin",
        short_with_value: "",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "exec",
        short_with_value: "a",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "xargs",
        short_with_value: "nIdPLsaE",
        long_with_value: &[
            "--max-args",
            "--replace",
            "--delimiter",
            "--max-procs",
            "--max-lines",
            "--max-chars",
            "--arg-file",
            "--eof",
            "--process-slot-var",
        ],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "sudo",
        short_with_value: "ugCDhprtUTR",
        long_with_value: &[
            "--user",
            "--group",
            "--close-from",
            "--chdir",
            "--host",
            "--prompt",
            "--role",
            "--type",
            "--other-user",
            "--command-timeout",
            "--chroot",
        ],
        assignments: true,
        leading_operands: 0,
        // `sudo -s CMD` / `sudo -i CMD` join CMD into a shell command line.
        opaque: &["-s", "--shell", "-i", "--login"],
    },
    // `chroot DIR CMD ARGS`: CMD runs inside DIR (judged as written).
    WrapperSpec {
        name: "chroot",
        short_with_value: "",
        long_with_value: &["--userspec", "--groups"],
        assignments: false,
        leading_operands: 1,
        opaque: &[],
    },
    // `flock [OPTS] FILE CMD ARGS`; `flock FILE -c STRING` is not followed.
    WrapperSpec {
        name: "flock",
        short_with_value: "wEc",
        long_with_value: &["--timeout", "--wait", "--conflict-exit-code", "--command"],
        assignments: false,
        leading_operands: 1,
        opaque: &["-c", "--command"],
    },
    WrapperSpec {
        name: "doas",
        short_with_value: "uC",
        long_with_value: &[],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "stdbuf",
        short_with_value: "ioe",
        long_with_value: &["--input", "--output", "--error"],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "ionice",
        short_with_value: "cnp",
        long_with_value: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
    WrapperSpec {
        name: "time",
        short_with_value: "fo",
        long_with_value: &["--format", "--output"],
        assignments: false,
        leading_operands: 0,
        opaque: &[],
    },
];

/// Skips a wrapper's options (and `env`/`sudo` assignments) to find the
/// wrapped command.
pub(super) fn unwrap(program: &str, words: &[String]) -> Unwrapped {
    let Some(spec) = WRAPPERS.iter().find(|w| w.name == program) else {
        return Unwrapped::NotWrapper;
    };
    // `flock FILE -c STRING`: the option comes after the lock file.
    if program == "flock"
        && words
            .iter()
            .any(|w| w == "-c" || w == "--command" || w.starts_with("--command="))
    {
        return Unwrapped::Unknown("`flock -c` runs a string as a shell command".to_string());
    }
    let mut assignments = Vec::new();
    let mut i = 1;
    let mut options_done = false;
    while i < words.len() {
        let word = words[i].as_str();
        if !options_done && is_flag(word) {
            let (name, has_value) = match word.split_once('=') {
                Some((name, _)) => (name, true),
                None => (word, false),
            };
            // `sudo -Es CMD`: -s inside a group of short flags.
            let sudo_shell = spec.name == "sudo"
                && !word.starts_with("--")
                && word[1..]
                    .chars()
                    .take_while(|c| !spec.short_with_value.contains(*c))
                    .any(|c| c == 's' || c == 'i');
            if spec.opaque.contains(&name)
                || (name.starts_with("-S") && spec.name == "env")
                || sudo_shell
            {
                return Unwrapped::Unknown(format!(
                    "`{} {word}` splits a string into a command",
                    spec.name
                ));
            }
            if word == "--" {
                options_done = true;
                i += 1;
                continue;
            }
            if word.starts_with("--") {
                i += if !has_value && spec.long_with_value.contains(&name) {
                    2
                } else {
                    1
                };
                continue;
            }
            // A short group: the first letter taking a value ends it; the
            // value is the rest of the group or else the next word. (`nice
            // -10` has no such letter, so it is skipped as one word.)
            let letters: Vec<char> = word[1..].chars().collect();
            let mut skip = 1;
            for (k, c) in letters.iter().enumerate() {
                if spec.short_with_value.contains(*c) {
                    if k + 1 == letters.len() {
                        skip = 2;
                    }
                    break;
                }
            }
            i += skip;
            continue;
        }
        if spec.assignments && is_assignment(word) {
            assignments.push(i);
            i += 1;
            continue;
        }
        break;
    }
    i += spec.leading_operands;
    if i >= words.len() {
        // No wrapped command: the wrapper alone (e.g. `env`, `sudo -v`).
        return Unwrapped::Inner {
            start: words.len(),
            assignments,
        };
    }
    Unwrapped::Inner {
        start: i,
        assignments,
    }
}

/// A `NAME=value` word with a valid shell variable name.
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

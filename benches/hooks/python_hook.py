#!/usr/bin/env python3
"""A Claude Code PreToolUse hook of the kind users write today, for the
start-to-answer comparison in docs/performance.md.

It does comparable work to `toolgate hook claude` on the same input: parse
the hook JSON, split a Bash command on && || ; | and check every part
against deny / ask / allow lists of regexes, resolve a file argument
(symlinks followed) and check it against the workspace and deny globs, then
print the decision in Claude Code's format. (It is also weaker than toolgate:
no quoting, wrappers, reordered flags or substitutions; that is the point of
the comparison's other half, not of this script.)
"""
import fnmatch
import json
import os
import re
import sys

DENY = [r"^rm\s+-[a-zA-Z]*r[a-zA-Z]*f", r"^rm\s+-[a-zA-Z]*f[a-zA-Z]*r", r"^sudo\b",
        r"^curl\b", r"^wget\b", r"^ssh\b", r"^git\s+push\s+.*--force", r"^dd\b"]
ASK = [r"^git\s+push\b", r"^rm\b", r"^npm\s+install\b", r"^pip\s+install\b"]
ALLOW = [r"^ls\b", r"^cat\b", r"^echo\b", r"^grep\b", r"^git\s+(status|diff|log|show)\b",
         r"^cargo\s+(build|test|check|clippy|fmt)\b", r"^npm\s+test\b", r"^pytest\b"]
DENY_GLOBS = ["*/.env", "*/.env.*", "*/.git/*", "*.pem", "*.key", "*/.ssh/*"]
READ_ONLY = ["*/Cargo.lock", "*/package-lock.json"]
PATH_ARGS = {"Read": ("file_path", "read"), "Write": ("file_path", "write"),
             "Edit": ("file_path", "write"), "Glob": ("path", "read"), "Grep": ("path", "read")}


def answer(decision, reason):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                             "permissionDecision": decision,
                                             "permissionDecisionReason": reason}}))
    sys.exit(0)


def check_command(command):
    verdict = ("allow", "allowed")
    for part in re.split(r"\s*(?:&&|\|\||;|\|)\s*", command.strip()):
        if not part:
            continue
        if any(re.search(p, part) for p in DENY):
            return ("deny", f"`{part}` is denied")
        if any(re.search(p, part) for p in ASK):
            verdict = ("ask", f"`{part}` needs approval")
        elif not any(re.search(p, part) for p in ALLOW) and verdict[0] == "allow":
            verdict = ("ask", f"`{part}` is not on the allow list")
    return verdict


def check_path(raw, access, workspace):
    path = os.path.realpath(os.path.join(workspace, os.path.expanduser(raw)))
    root = os.path.realpath(workspace)
    if not (path == root or path.startswith(root + os.sep)):
        return ("deny", f"{raw} is outside the workspace")
    if any(fnmatch.fnmatch(path, g) for g in DENY_GLOBS):
        return ("deny", f"{raw} is denied")
    if access == "write" and any(fnmatch.fnmatch(path, g) for g in READ_ONLY):
        return ("deny", f"{raw} is read-only")
    return ("allow", "allowed")


def main():
    try:
        if len(sys.argv) > 1:  # a saved input, to time it without a shell
            with open(sys.argv[1], encoding="utf-8") as f:
                event = json.load(f)
        else:
            event = json.load(sys.stdin)
    except ValueError as e:
        print(f"invalid hook input: {e}", file=sys.stderr)
        sys.exit(2)
    tool, args = event.get("tool_name", ""), event.get("tool_input") or {}
    workspace = event.get("cwd") or os.getcwd()
    if tool == "Bash":
        answer(*check_command(args.get("command", "")))
    if tool in PATH_ARGS:
        name, access = PATH_ARGS[tool]
        if args.get(name):
            answer(*check_path(args[name], access, workspace))
        answer("allow", "allowed")
    answer("ask", f"unknown tool {tool}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora from the project's own test data.

Run from the repository root: `python3 fuzz/seeds/make-seeds.py`. The
output is committed (fuzz/seeds/<target>/), so CI needs neither Python nor
PyYAML; rerun it when the test corpora grow. Policies and manifests are
not copied here: the fuzz run reads policies/, tool-manifests/ and
tests/fixtures/ directly as extra corpus folders.
"""

import hashlib
import json
import pathlib
import shutil

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEEDS = ROOT / "fuzz" / "seeds"

# Argument shapes for the built-in tools, in the order the coerce_validate
# target's first byte picks them: read, write, edit, bash, grep, find, ls.
TOOL_ARGS = {
    0: [{"path": "src/main.rs"}, {"path": "a", "offset": "3", "limit": 10},
        {"file_path": "a", "offset": None}, {"path": 5}],
    1: [{"path": "a.txt", "content": "hi"}, {"path": "a", "content": None},
        {"path": "a", "content": ["x"]}],
    2: [{"path": "a", "edits": [{"oldText": "a", "newText": "b"}]},
        {"path": "a", "oldText": "x", "newText": "y"},
        {"path": "a", "edits": "[{\"oldText\":\"x\",\"newText\":\"y\"}]"},
        {"path": "a", "edits": {"oldText": "x", "newText": "y"}}],
    3: [{"command": "ls -la"}, {"command": "sleep 1", "timeout": "5"},
        {"command": ["ls"]}],
    4: [{"pattern": "fn main", "path": "src", "ignoreCase": "true", "context": 2},
        {"pattern": "x", "limit": "1e3", "literal": 1}],
    5: [{"pattern": "*.rs", "path": "src", "limit": 10}, {"pattern": None}],
    6: [{}, {"path": "src", "limit": "20"}, {"path": None}],
}

# Own-schema cases: SCHEMA 0xFF ARGUMENTS.
SCHEMA_CASES = [
    ({"type": "object", "properties": {"n": {"type": ["integer", "null"]}}}, {"n": "4"}),
    ({"anyOf": [{"type": "number"}, {"type": "string"}]}, "3.5"),
    ({"$defs": {"a": {"type": "array", "items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}, [[[[]]]]),
    ({"type": "object", "required": ["x"], "properties": {"x": {"enum": [1, "1", True]}}}, {"x": "true"}),
]


def write(target, name, data):
    folder = SEEDS / target
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha1(data).hexdigest()[:12]
    (folder / f"{name}-{digest}").write_bytes(data)


def main():
    for target in ["shell_analyzer", "coerce_validate", "redact"]:
        shutil.rmtree(SEEDS / target, ignore_errors=True)

    shell = yaml.safe_load((ROOT / "tests/corpus/shell.yaml").read_text())
    for case in shell["cases"]:
        write("shell_analyzer", "corpus", case["command"].encode())
    policy = yaml.safe_load((ROOT / "tests/corpus/policy.yaml").read_text())
    for entry in policy.get("commands", {}).get("deny", []) + policy.get("commands", {}).get("allow", []):
        pattern = entry if isinstance(entry, str) else entry["pattern"]
        write("shell_analyzer", "pattern", pattern.encode())
    for case in yaml.safe_load((ROOT / "policies/tests/default.yaml").read_text())["tests"]:
        command = case.get("args", {}).get("command")
        if isinstance(command, str):
            write("shell_analyzer", "policy-test", command.encode())

    for index, cases in TOOL_ARGS.items():
        for args in cases:
            write("coerce_validate", "tool", bytes([index]) + json.dumps(args).encode())
    paths = yaml.safe_load((ROOT / "tests/corpus/paths.yaml").read_text())
    for case in paths["cases"]:
        write("coerce_validate", "path", bytes([0]) + json.dumps({"path": case["path"]}).encode())
    for schema, args in SCHEMA_CASES:
        data = bytes([7]) + json.dumps(schema).encode() + b"\xff" + json.dumps(args).encode()
        write("coerce_validate", "schema", data)

    samples = [
        "token ghp_0123456789abcdefghij0123456789abcdef and more",
        "AKIAIOSFODNN7EXAMPLE aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n",
        "xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx",
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnopqrstu",
        "plain output with no secrets\n" * 4,
    ]
    for sample in samples:
        # The first byte sets the chunk sizes of the streamed run.
        write("redact", "sample", bytes([17]) + sample.encode())


if __name__ == "__main__":
    main()

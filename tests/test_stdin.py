"""`cudalint --stdin-filename PATH -`: standard input analysed as the file
PATH, with the rest of its package read from disk (ALE, efm-langserver,
pre-commit-like tools pipe buffers); the same findings as the file on
disk would give, under PATH's name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_server import LEAK, RELEASED, _module


def _run(*args: str, cwd: Path, stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudalint", "--no-cache", *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=300,
    )


def test_standard_input_is_analysed_as_the_named_file(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": RELEASED})
    done = _run("--stdin-filename", "fill.go", "-", cwd=module, stdin=LEAK)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("fill.go:12:11: CL101 ")
    assert (module / "fill.go").read_text() == RELEASED  # nothing written
    # The file on disk is clean; so is standard input with its text.
    assert _run("--stdin-filename", "fill.go", cwd=module, stdin=RELEASED).returncode == 0


def test_the_rest_of_the_package_comes_from_disk_and_a_new_file_needs_no_disk(tmp_path):
    helper = LEAK.replace("func Fill(n int) error {", "func alloc(n int) (unsafe.Pointer, error) {").replace(
        "\t\treturn nil\n\t}\n\treturn nil\n}", "\t\treturn nil, nil\n\t}\n\treturn p, nil\n}",
    )
    module = _module(tmp_path / "svc", {"alloc.go": helper})
    caller = 'package gpu\n\nfunc Use() error {\n\tp, err := alloc(8)\n\tif err != nil {\n\t\treturn err\n\t}\n\t_ = p\n\treturn nil\n}\n'
    done = _run("--format", "json", "--stdin-filename", "sub/../use.go", "-", cwd=module, stdin=caller)
    report = json.loads(done.stdout)
    assert [(f["path"], f["rule"]) for f in report["findings"]] == [("use.go", "CL101")], done.stderr
    assert not (module / "use.go").exists()


def test_the_configuration_of_the_named_file_applies(tmp_path):
    module = _module(tmp_path / "svc", {".cudalint.toml": 'exclude = ["gen_*.go"]\nignore = ["CL101"]\n'})
    assert _run("--stdin-filename", "fill.go", "-", cwd=module, stdin=LEAK).returncode == 0
    excluded = _run("--select", "CL1", "--stdin-filename", "gen_fill.go", "-", cwd=module, stdin=LEAK)
    assert excluded.returncode == 0
    assert "nothing analysed: gen_fill.go is excluded by the exclude list of .cudalint.toml" in excluded.stderr


def test_what_standard_input_cannot_do_is_a_usage_error(tmp_path):
    module = _module(tmp_path / "svc", {"fill.go": LEAK})
    for args, expected in (
        (("-",), "'-' reads standard input"),
        (("--stdin-filename", "fill.go", "--fix", "-"), "--stdin-filename and --fix exclude each other"),
        (("--stdin-filename", "fill.go", "a.go"), "give '-' as the only pattern"),
        (("--stdin-filename", "notes.txt", "-"), "is not a .go file"),
        (("--server", "./..."), "--server takes no patterns"),
    ):
        done = _run(*args, cwd=module, stdin=LEAK)
        assert done.returncode == 2 and expected in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert (module / "fill.go").read_text() == LEAK

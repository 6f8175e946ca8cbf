"""The command line as users and CI call it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cudalint import __version__
from clirun import CGO_FILE, cudalint, cudalint_process

BLANK_FILE = """package q

// #include <cuda_runtime_api.h>
import "C"

func reset() {
	_ = C.cudaDeviceReset()
}
"""

CLEAN_FILE = """package r

// #include <cuda_runtime_api.h>
import "C"

import "errors"

func reset() error {
	if st := C.cudaDeviceReset(); st != C.cudaSuccess {
		return errors.New("reset failed")
	}
	return nil
}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "a.go").write_text(CGO_FILE)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "b.go").write_text(BLANK_FILE)
    (tmp_path / "clean").mkdir()
    (tmp_path / "clean" / "c.go").write_text(CLEAN_FILE)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "p.go").write_text("package plain\n\nfunc F() {}\n")
    return tmp_path


def test_default_pattern_text_output_and_exit_status(project: Path) -> None:
    run = cudalint(cwd=project)
    assert run.exit_code == 1
    assert run.stdout.splitlines() == [
        "a/a.go:7:2: CL301 the cudaError_t returned by C.cudaDeviceSynchronize is discarded; "
        "compare it with C.cudaSuccess and handle the failure",
        "b/b.go:7:6: CL302 the cudaError_t returned by C.cudaDeviceReset is assigned to _; "
        "compare it with C.cudaSuccess and handle the failure",
        "Found 2 findings (CL301: 1, CL302: 1): 1 error, 1 warning; 3 files analysed, 1 without GPU code skipped.",
    ]


def test_clean_package_exits_zero(project: Path) -> None:
    run = cudalint("clean", cwd=project)
    assert run.exit_code == 0
    assert run.stdout == "No findings (1 file analysed).\n"


def test_select_and_ignore_by_prefix(project: Path) -> None:
    assert "CL302" not in cudalint("--select", "CL301", cwd=project).stdout
    only_blank = cudalint("--ignore", "cl301", cwd=project)
    assert only_blank.exit_code == 1 and "CL301" not in only_blank.stdout and "CL302" in only_blank.stdout
    assert cudalint("--ignore", "CL3", cwd=project).exit_code == 0


def test_unknown_rule_prefix_is_a_usage_error(project: Path) -> None:
    run = cudalint("--select", "CL999", cwd=project)
    assert run.exit_code == 2 and "matches no rule" in run.stderr


def test_pattern_matching_nothing_is_an_error(project: Path) -> None:
    run = cudalint("nowhere/...", cwd=project)
    assert run.exit_code == 2
    assert "pattern 'nowhere/...' matches no Go files" in run.stderr


def test_quiet_prints_findings_only(project: Path) -> None:
    run = cudalint("-q", cwd=project)
    assert run.exit_code == 1
    assert len(run.stdout.splitlines()) == 2 and "Found" not in run.stdout


def test_json_output(project: Path) -> None:
    run = cudalint("--format", "json", cwd=project)
    document = json.loads(run.stdout)
    assert document["schema_version"] == 1
    assert document["tool"] == {"name": "cudalint", "version": __version__}
    first = document["findings"][0]
    assert first == {
        "rule": "CL301", "name": "status-discarded", "level": "error", "path": "a/a.go",
        "line": 7, "column": 2, "end_line": 7, "end_column": 27, "function": "sync",
        "message": first["message"], "steps": [],
        "fingerprint": first["fingerprint"], "suppression": None, "fixes": [],
    }
    assert re.fullmatch(r"[0-9a-f]{16}:1", first["fingerprint"])
    assert document["summary"]["by_rule"] == {"CL301": 1, "CL302": 1}


def test_output_file_is_written_and_stdout_stays_empty(project: Path) -> None:
    (project / "out").write_text("")
    run = cudalint("--format", "json", "--output", "out/report.json", cwd=project)
    assert run.exit_code == 2  # "out" is a file: a tool error, no traceback (a missing directory is created)
    (project / "out").unlink()
    run = cudalint("--format", "json", "--output", "out/report.json", cwd=project)
    assert run.exit_code == 1 and run.stdout == ""
    assert json.loads((project / "out" / "report.json").read_text())["summary"]["findings"] == 2
    assert [p.name for p in (project / "out").iterdir()] == ["report.json"]


def test_list_rules_explain_and_version(project: Path) -> None:
    listing = cudalint("--list-rules", cwd=project)
    assert listing.exit_code == 0
    assert listing.stdout.splitlines()[0].split() == ["ID", "NAME", "LEVEL", "SUMMARY"]
    assert ["CL301", "status-discarded", "error"] in [line.split()[:3] for line in listing.stdout.splitlines()]
    explained = cudalint("--explain", "cl302", cwd=project)
    assert explained.exit_code == 0
    for section in ("# CL302 status-blank", "## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert section in explained.stdout
    assert cudalint("--explain", "CL999", cwd=project).exit_code == 2
    assert cudalint("--version", cwd=project).stdout.strip() == f"cudalint, version {__version__}"


def test_jobs_do_not_change_the_output(project: Path) -> None:
    for i in range(40):  # enough packages for the worker pool to be used
        (project / f"extra{i}").mkdir()
        (project / f"extra{i}" / "e.go").write_text(CGO_FILE.replace("package p", f"package extra{i}"))
    one = cudalint_process("--format", "json", "--jobs", "1", cwd=project)
    two = cudalint_process("--format", "json", "--jobs", "2", cwd=project)
    assert one.exit_code == two.exit_code == 1
    assert one.stdout == two.stdout
    assert json.loads(one.stdout)["summary"]["findings"] == 42


def test_python_dash_m_and_bad_option(project: Path) -> None:
    run = cudalint_process("--format", "xml", cwd=project)
    assert run.exit_code == 2 and "Invalid value for --format" in run.stderr
    assert "Traceback" not in run.stderr


def test_user_rules_file_teaches_a_wrapper(tmp_path: Path) -> None:
    (tmp_path / "w.go").write_text(
        'package w\n\nimport "acme.example/gpu"\n\nfunc f() {\n\tgpu.Sync()\n\t_ = gpu.Count()\n}\n'
    )
    (tmp_path / "acme.toml").write_text(
        'family = "acme"\ndescription = "ACME wrapper"\nimport = "acme.example/gpu"\n'
        '[status]\ntype = "error"\nkind = "error"\nresult = "last"\n'
        '[status_calls]\nmatch = ["gpu.*"]\nexcept = ["gpu.Count"]\n'
    )
    assert cudalint("w.go", cwd=tmp_path).exit_code == 0
    run = cudalint("--rules", "acme.toml", "w.go", cwd=tmp_path)
    assert run.exit_code == 1
    assert run.stdout.splitlines()[0] == (
        "w.go:6:2: CL301 the error returned by gpu.Sync is discarded; check that it is nil and handle the failure"
    )
    (tmp_path / "bad.toml").write_text('family = "x"\ndescription = "y"\nimport = "z"\nsurprise = 1\n')
    bad = cudalint("--rules", "bad.toml", "w.go", cwd=tmp_path)
    assert bad.exit_code == 2 and "bad.toml: top level: unknown key 'surprise'" in bad.stderr


def test_result_cache_gives_identical_output_and_misses_on_change(project: Path) -> None:
    # Files written less than two seconds before a run are not kept in the
    # file index (their status cannot vouch for them): backdated, the first
    # run keeps them, however slowly the runs follow one another.
    backdated = time.time() - 60
    for path in project.rglob("*.go"):
        os.utime(path, (backdated, backdated))
    first = cudalint_process("--format", "json", cwd=project)
    cache = project / ".cudalint_cache"
    assert (cache / ".gitignore").read_text().endswith("*\n") and (cache / "CACHEDIR.TAG").exists()
    entries = sorted(p for p in cache.rglob("*") if p.is_file() and p.parent != cache)
    assert entries
    warm = cudalint_process("--format", "json", cwd=project)
    assert warm.stdout == first.stdout
    assert sorted(p for p in cache.rglob("*") if p.is_file() and p.parent != cache) == entries  # all hits
    (project / "b" / "b.go").write_text(BLANK_FILE.replace("_ = C.cudaDeviceReset()", "C.cudaDeviceReset()"))
    changed = json.loads(cudalint_process("--format", "json", cwd=project).stdout)
    assert [f["rule"] for f in changed["findings"]] == ["CL301", "CL301"]
    uncached = cudalint_process("--format", "json", "--no-cache", cwd=project)
    assert json.loads(uncached.stdout) == changed
    elsewhere = project / "elsewhere"
    cudalint_process("--cache-dir", str(elsewhere), cwd=project)
    assert any(elsewhere.rglob("*"))


@pytest.mark.slow
def test_every_fixture_gives_byte_identical_output_however_it_is_run(tmp_path: Path) -> None:
    """Determinism over many rules and packages: 1 or 2 workers, a cold or a
    warm cache, or no cache at all, give the same bytes, in every format."""
    tree = tmp_path / "fixtures"
    shutil.copytree(Path(__file__).parent / "fixtures", tree)
    for output_format in ("json", "sarif"):
        cache = tmp_path / f"cache-{output_format}"
        runs = [
            cudalint_process("--format", output_format, "--jobs", "1", "--no-cache", "./...", cwd=tree),
            cudalint_process("--format", output_format, "--jobs", "2", "--cache-dir", str(cache), "./...", cwd=tree),
            cudalint_process("--format", output_format, "--jobs", "2", "--cache-dir", str(cache), "./...", cwd=tree),
            cudalint_process("--format", output_format, "--jobs", "1", "--cache-dir", str(cache), "./...", cwd=tree),
        ]
        assert {run.exit_code for run in runs} == {1}, runs[0].stderr
        assert len({run.stdout for run in runs}) == 1
        document = json.loads(runs[0].stdout)
        findings = document["findings"] if output_format == "json" else document["runs"][0]["results"]
        assert len(findings) > 100


_GRAPH_LIBRARY_PROBE = """
import sys
import time
from cudalint.app.cli import main
try:
    main(["-j", "1", "-q", "./..."])
except SystemExit:
    pass
print("networkx.classes" in sys.modules)
"""


def test_a_run_answered_by_the_cache_never_loads_the_graph_library(project: Path) -> None:
    """Start-up is most of a warm run: networkx is loaded only when a graph
    is built, which a cold run does and a warm one does not."""
    def loads_networkx() -> bool:
        done = subprocess.run([sys.executable, "-c", _GRAPH_LIBRARY_PROBE], cwd=project, capture_output=True, text=True)
        return done.stdout.strip().splitlines()[-1] == "True"

    assert loads_networkx()  # cold: the findings need graphs
    assert not loads_networkx()  # warm: every directory is a cache hit


def test_named_files_are_judged_with_their_whole_package(tmp_path: Path) -> None:
    """A file named on its own (as the pre-commit hook names staged files)
    gets exactly the findings a run over its package gives it: the rest of
    the package is read (here the converter), not reported."""
    (tmp_path / "alloc.go").write_text(
        'package gpu\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nimport "unsafe"\n\n'
        "func Zero(n C.size_t) error {\n\tvar d unsafe.Pointer\n\tres := C.cudaMalloc(&d, n)\n"
        "\tif err := errorString(res); err != nil {\n\t\treturn err\n\t}\n\tdefer C.cudaFree(d)\n\treturn nil\n}\n"
    )
    (tmp_path / "helpers.go").write_text(
        'package gpu\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nimport "errors"\n\n'
        "func errorString(res C.cudaError_t) error {\n\tif res != C.cudaSuccess {\n\t\treturn errors.New(\"cuda\")\n\t}\n\treturn nil\n}\n\n"
        "func sync() {\n\tC.cudaDeviceSynchronize()\n}\n"
    )

    def findings(*patterns: str) -> list[tuple[str, int, str]]:
        run = cudalint("--no-cache", "--format", "json", *patterns, cwd=tmp_path)
        return [(f["path"], f["line"], f["rule"]) for f in json.loads(run.stdout)["findings"]]

    whole = findings(".")
    assert whole == [("helpers.go", 16, "CL301")]
    assert findings("alloc.go") == [f for f in whole if f[0] == "alloc.go"] == []
    assert findings("helpers.go") == whole
    assert findings("alloc.go", "helpers.go") == whole


def test_all_modules_walks_nested_modules_and_dot_dot_dot_keeps_the_go_meaning(tmp_path: Path) -> None:
    for module in ("svc", "tools/gen"):
        (tmp_path / module).mkdir(parents=True)
        (tmp_path / module / "go.mod").write_text(f"module example.com/{module}\n\ngo 1.21\n")
        (tmp_path / module / "a.go").write_text(CGO_FILE)
    only_nested = cudalint("--no-cache", "./...", cwd=tmp_path)
    assert only_nested.exit_code == 2 and "--all-modules" in only_nested.stderr
    everything = cudalint("--no-cache", "--format", "json", "--all-modules", "./...", cwd=tmp_path)
    assert everything.exit_code == 1
    assert sorted({f["path"] for f in json.loads(everything.stdout)["findings"]}) == ["svc/a.go", "tools/gen/a.go"]
    (tmp_path / "go.mod").write_text("module example.com/root\n\ngo 1.21\n")
    (tmp_path / "root.go").write_text(CGO_FILE)
    root_only = cudalint("--no-cache", "--format", "json", "./...", cwd=tmp_path)
    assert {f["path"] for f in json.loads(root_only.stdout)["findings"]} == {"root.go"}


def test_select_and_ignore_add_up_when_repeated(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(CGO_FILE)
    run = cudalint("--no-cache", "--format", "json", "--select", "CL3", "--select", "CL1", "--ignore", "CL302", "--ignore", "CL304", ".", cwd=tmp_path)
    rules = {f["rule"] for f in json.loads(run.stdout)["findings"]}
    assert rules and rules <= {"CL301", "CL303", "CL101", "CL102", "CL103", "CL104", "CL105"}
    assert rules == {f["rule"] for f in json.loads(cudalint(
        "--no-cache", "--format", "json", "--select", "CL3,CL1", "--ignore", "CL302,CL304", ".", cwd=tmp_path,
    ).stdout)["findings"]}


def test_output_dash_is_standard_output_and_a_file_is_announced(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(CGO_FILE)
    dash = cudalint("--no-cache", "--format", "sarif", "-o", "-", ".", cwd=tmp_path)
    assert dash.stdout.startswith("{") and not (tmp_path / "-").exists()
    written = cudalint("--no-cache", "--format", "sarif", "-o", "out.sarif", ".", cwd=tmp_path)
    assert written.stdout == "" and (tmp_path / "out.sarif").is_file()
    assert "cudalint: wrote the sarif report to out.sarif: " in written.stderr and " finding" in written.stderr


def test_fail_on_and_exit_zero(tmp_path: Path) -> None:
    """A note-only run (CL304) fails by default; --fail-on error shows it
    without failing; --exit-zero never fails on findings; a configured level
    counts."""
    (tmp_path / "a.go").write_text(
        'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nimport "unsafe"\n\nfunc f(p unsafe.Pointer) {\n\tC.cudaFree(p)\n}\n'
    )
    assert cudalint("--no-cache", "a.go", cwd=tmp_path).exit_code == 1
    shown = cudalint("--no-cache", "--fail-on", "error", "a.go", cwd=tmp_path)
    assert shown.exit_code == 0 and "CL304" in shown.stdout
    assert cudalint("--no-cache", "--fail-on", "note", "a.go", cwd=tmp_path).exit_code == 1
    assert cudalint("--no-cache", "--exit-zero", "a.go", cwd=tmp_path).exit_code == 0
    (tmp_path / ".cudalint.toml").write_text('[level]\nCL304 = "error"\n')
    assert cudalint("--no-cache", "--fail-on", "error", "a.go", cwd=tmp_path).exit_code == 1
    assert cudalint("--no-cache", "--exit-zero", "nowhere.go", cwd=tmp_path).exit_code == 2


def test_statistics_counts_findings_per_rule(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(CGO_FILE)
    full = json.loads(cudalint("--no-cache", "--format", "json", "a.go", cwd=tmp_path).stdout)["findings"]
    run = cudalint("--no-cache", "--statistics", "a.go", cwd=tmp_path)
    assert run.exit_code == 1
    rows = [line.split() for line in run.stdout.splitlines()]
    from collections import Counter

    assert {(row[1], int(row[0])) for row in rows} == set(Counter(f["rule"] for f in full).items())
    assert all(row[3].startswith("[") for row in rows)


def test_several_outputs_in_one_run(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(CGO_FILE)
    run = cudalint("--no-cache", "--format", "sarif:out.sarif", "--format", "json:out.json", "--format", "text", "a.go", cwd=tmp_path)
    assert run.exit_code == 1 and "CL301" in run.stdout and run.stdout.rstrip().splitlines()[-1].startswith("Found ")
    assert json.loads((tmp_path / "out.sarif").read_text())["version"] == "2.1.0"
    assert json.loads((tmp_path / "out.json").read_text())["findings"]
    assert "wrote the sarif report to out.sarif" in run.stderr and "wrote the json report to out.json" in run.stderr
    twice = cudalint("--no-cache", "--format", "json", "--format", "text", "a.go", cwd=tmp_path)
    assert twice.exit_code == 2 and "only one format can go to standard output" in twice.stderr
    assert cudalint("--no-cache", "--format", "yaml", "a.go", cwd=tmp_path).exit_code == 2


def test_the_cache_lives_with_the_analysed_tree(tmp_path: Path) -> None:
    tree, elsewhere = tmp_path / "service", tmp_path / "elsewhere"
    (tree / ".git").mkdir(parents=True)
    (tree / "gpu").mkdir()
    (tree / "gpu" / "a.go").write_text(CGO_FILE)
    elsewhere.mkdir()
    assert cudalint(str(tree / "gpu"), cwd=elsewhere).exit_code == 1
    assert (tree / ".cudalint_cache").is_dir() and not (elsewhere / ".cudalint_cache").exists()
    assert cudalint("./...", cwd=tree / "gpu").exit_code == 1
    assert (tree / "gpu" / ".cudalint_cache").is_dir()  # below the current directory: there, as before


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    """On a terminal (a real pseudo-terminal here) a run that takes longer
    than the threshold (lowered to 0 by CUDALINT_PROGRESS_AFTER) shows
    `cudalint: N/M packages analysed` on stderr and clears it; in a pipe, or
    with CI set, never."""
    import os
    import pty
    import subprocess
    import sys

    (tmp_path / "a.go").write_text(CGO_FILE)
    main, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"} | {"CUDALINT_PROGRESS_AFTER": "0", "TERM": "xterm"}
    try:
        subprocess.run(
            [sys.executable, "-m", "cudalint", "--no-cache", "a.go"], cwd=tmp_path, env=env,
            stdout=subprocess.DEVNULL, stderr=secondary, timeout=120,
        )
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(main)
    assert b"cudalint: 1/1 packages analysed" in shown and b"\x1b[K" in shown
    piped = subprocess.run(
        [sys.executable, "-m", "cudalint", "--no-cache", "a.go"], cwd=tmp_path, env=env, capture_output=True, timeout=120,
    )
    assert b"packages analysed" not in piped.stderr

"""Issue 24, item 7 and what users of the peers expect: --diff --exit-zero,
the release's version everywhere, preview rules marked in --list-rules,
directives other tools' users type, nested modules said once, a closed pipe,
FORCE_COLOR / CLICOLOR_FORCE, the progress line's timer, --show-fixes,
fixable / unfixable, max-same-issues, --clean-cache and --show-settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clirun import CGO_FILE, cgo_project, cudalint

ANSI = "\x1b["

DEFER_EARLY = """package p

// #include <cuda_runtime_api.h>
import "C"

import "unsafe"

func early(n int) {
	var d unsafe.Pointer
	defer C.cudaFree(d)
	if st := C.cudaMalloc(&d, C.size_t(n)); st != C.cudaSuccess {
		return
	}
}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return cgo_project(tmp_path)


@pytest.fixture
def fixable(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.go").write_text(DEFER_EARLY)
    return tmp_path


# -- --diff --exit-zero ------------------------------------------------------


def test_diff_with_exit_zero_exits_0(fixable: Path) -> None:
    shown = cudalint("--no-cache", "--diff", "--exit-zero", ".", cwd=fixable)
    assert shown.exit_code == 0, shown.stderr
    assert "+\tdefer C.cudaFree(d)" in shown.stdout
    assert cudalint("--no-cache", "--diff", ".", cwd=fixable).exit_code == 1


# -- the release ---------------------------------------------------------------


def test_one_version_everywhere(project: Path) -> None:
    from cudalint import __version__
    from cudalint.checks import all_rules

    assert __version__ == "0.2.0"
    assert cudalint("--version", cwd=project).stdout.strip() == "cudalint, version 0.2.0"
    root = Path(__file__).resolve().parents[1]
    assert '"version": "0.2.0"' in (root / "README.md").read_text()
    assert "@v0.2.0" in (root / "README.md").read_text() and "@v0.1.0" not in (root / "README.md").read_text()
    # No rule is newer than the release, and the retired one says the release that retired it.
    newest = max(tuple(int(part) for part in rule.since.split(".")) for rule in all_rules())
    assert newest <= tuple(int(part) for part in __version__.split("."))
    listing = cudalint("--list-rules", cwd=project).stdout
    assert f"Retired in {__version__}" in listing
    sarif = json.loads(cudalint("--no-cache", "--format", "sarif", cwd=project).stdout)
    driver = sarif["runs"][0]["tool"]["driver"]
    assert driver["version"] == driver["semanticVersion"] == "0.2.0"
    changelog = (root / "CHANGELOG.md").read_text()
    assert "## 0.2.0" in changelog and "## 0.1.0" in changelog


def test_list_rules_marks_preview_rules(project: Path, monkeypatch) -> None:
    """Every rule has left preview for now: the listing is checked with one
    put back into it."""
    import importlib
    from dataclasses import replace

    from cudalint.checks import all_rules

    commands = importlib.import_module("cudalint.app.commands")
    rules = [replace(rule, preview=rule.id == "CL508") for rule in all_rules()]
    monkeypatch.setattr(commands, "all_rules", lambda: rules)
    listing = cudalint("--list-rules", cwd=project).stdout.splitlines()
    rows = {line.split(None, 3)[0]: line.split(None, 3)[3] for line in listing[1:]}
    for rule in rules:
        assert rows[rule.id].startswith("[preview since ") == rule.preview, rows[rule.id]
    assert rows["CL508"].startswith("[preview since 0.2.0] ")


# -- directives ------------------------------------------------------------------


def _directive_file(tmp_path: Path, body: str) -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "a.go").write_text(
        'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nfunc f() {\n' + body + "}\n"
    )
    return tmp_path


def _cl001(run) -> list[str]:
    return [line for line in run.stdout.splitlines() if " CL001 " in line]


def test_a_space_after_the_comma_says_so(tmp_path: Path) -> None:
    _directive_file(tmp_path, "\t//cudalint:ignore CL301, CL302 legacy code\n\tC.cudaDeviceSynchronize()\n")
    run = cudalint("--no-cache", ".", cwd=tmp_path)
    (line,) = _cl001(run)
    assert line.startswith("a.go:7:2: CL001 ")
    assert "no space after a comma" in line and "CL301,CL302" in line
    assert "''" not in line  # not "'' is not a rule ID"


def test_a_block_comment_directive_is_a_cl001(tmp_path: Path) -> None:
    _directive_file(tmp_path, "\t/* cudalint:ignore CL301 legacy */\n\tC.cudaDeviceSynchronize()\n")
    run = cudalint("--no-cache", ".", cwd=tmp_path)
    (line,) = _cl001(run)
    assert "a.go:7:2: CL001 not a suppression" in line and "//cudalint:ignore" in line and "/*" in line
    # Prose that mentions the tool in a block comment is not a directive.
    _directive_file(tmp_path, "\t/* see the cudalint docs: cudalint: ignore nothing */\n\tC.cudaDeviceSynchronize()\n")
    assert _cl001(cudalint("--no-cache", ".", cwd=tmp_path)) == []


@pytest.mark.parametrize(("comment", "right"), [
    ("//nolint:cudalint", "//cudalint:ignore RULES <reason>"),
    ("//nolint:errcheck,cudalint // legacy", "//cudalint:ignore RULES <reason>"),
    ("//lint:ignore CL301 legacy code", "//cudalint:ignore CL301 <reason>"),
    ("//lint:file-ignore SA1000,CL3 legacy code", "//cudalint:file-ignore CL3 <reason>"),
])
def test_other_tools_directives_get_a_hint(tmp_path: Path, comment: str, right: str) -> None:
    _directive_file(tmp_path, f"\tC.cudaDeviceSynchronize() {comment}\n")
    run = cudalint("--no-cache", ".", cwd=tmp_path)
    (line,) = _cl001(run)
    assert line.startswith("a.go:7:") and "not a suppression" in line and right in line, line
    assert "CL301" in run.stdout  # and nothing is suppressed


@pytest.mark.parametrize("comment", ["//nolint:errcheck", "//nolint", "//lint:ignore SA1000 legacy"])
def test_other_tools_directives_for_themselves_are_left_alone(tmp_path: Path, comment: str) -> None:
    _directive_file(tmp_path, f"\tC.cudaDeviceSynchronize() {comment}\n")
    assert _cl001(cudalint("--no-cache", ".", cwd=tmp_path)) == []


# -- nested modules ------------------------------------------------------------


def test_nested_modules_left_out_are_said_once(project: Path) -> None:
    (project / "go.mod").write_text("module example.com/top\n")
    for name in ("tools", "sub/inner"):
        (project / name).mkdir(parents=True)
        (project / name / "go.mod").write_text(f"module example.com/{name}\n")
        (project / name / "b.go").write_text(CGO_FILE)
    run = cudalint("--no-cache", "./...", cwd=project)
    notes = [line for line in run.stderr.splitlines() if "go.mod" in line]
    assert len(notes) == 1, run.stderr
    assert notes[0].startswith("cudalint: note: 2 directories") and "--all-modules" in notes[0]
    assert "sub/inner" in notes[0] and "tools" in notes[0]
    assert "tools/b.go" not in run.stdout
    everything = cudalint("--no-cache", "--all-modules", "./...", cwd=project)
    assert "go.mod" not in everything.stderr and "tools/b.go" in everything.stdout
    assert "go.mod" not in cudalint("--no-cache", "--quiet", "./...", cwd=project).stderr


# -- a closed pipe -------------------------------------------------------------


def _closed_pipe_run(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte
    try:
        return subprocess.run(
            [sys.executable, "-m", "cudalint", *args], cwd=cwd, stdout=write_end, stderr=subprocess.PIPE, timeout=300,
        )
    finally:
        os.close(write_end)


def test_a_closed_pipe_ends_quietly_with_the_findings_status(project: Path) -> None:
    done = _closed_pipe_run("--no-cache", "./...", cwd=project)
    assert done.returncode == 1 and done.stderr == b"", done.stderr
    (project / "gpu" / "a.go").write_text(CGO_FILE.replace("C.cudaDeviceSynchronize()", "_ = 1"))
    clean = _closed_pipe_run("--no-cache", "./...", cwd=project)
    assert clean.returncode == 0 and clean.stderr == b""
    for question in (["--list-rules"], ["--help"], ["--explain", "CL301"], ["--version"]):
        asked = _closed_pipe_run(*question, cwd=project)
        assert asked.returncode == 0 and asked.stderr == b"", (question, asked.stderr)


def test_a_reader_that_stops_early_under_pipefail(project: Path) -> None:
    """`cudalint ./... | head -1` under `set -o pipefail`: whether head has
    gone when cudalint writes is a race (here head may read it all), so the
    reader is one that never reads (`true`), which is the case that turned
    into exit 2."""
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", f"{sys.executable} -m cudalint --no-cache ./... | true"],
        cwd=project, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "error" not in done.stderr


# -- colour ----------------------------------------------------------------------


@pytest.mark.parametrize(("env", "coloured"), [
    ({"FORCE_COLOR": "1"}, True),
    ({"CLICOLOR_FORCE": "1"}, True),
    ({"FORCE_COLOR": "0"}, False),
    ({"CLICOLOR_FORCE": "0"}, False),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
    ({"CLICOLOR_FORCE": "1", "NO_COLOR": "1"}, False),
    ({}, False),
])
def test_force_color(project: Path, env: dict[str, str], coloured: bool) -> None:
    clean = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE", "NO_COLOR")}
    done = subprocess.run(
        [sys.executable, "-m", "cudalint", "--no-cache", "./..."], cwd=project, env=clean | env,
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1
    assert (ANSI in done.stdout) == coloured, done.stdout


def test_forced_colour_never_reaches_a_report_file(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"FORCE_COLOR": "1"}
    subprocess.run(
        [sys.executable, "-m", "cudalint", "--no-cache", "--format", "text:out.txt", "./..."], cwd=project, env=env,
        capture_output=True, timeout=300,
    )
    assert "CL301" in (project / "out.txt").read_text() and ANSI not in (project / "out.txt").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "cudalint", "--no-cache", "--color", "never", "./..."], cwd=project, env=env,
        capture_output=True, text=True, timeout=300,
    )
    assert ANSI not in done.stdout


# -- --show-fixes, fixable / unfixable ------------------------------------------


def test_show_fixes_lists_what_fix_fixed(fixable: Path) -> None:
    run = cudalint("--no-cache", "--fix", "--show-fixes", ".", cwd=fixable)
    assert "Fixed 1 finding:\n- a.go:\n    1 x CL202 (defer-before-acquire)\n" in run.stderr, run.stderr
    (fixable / "a.go").write_text(DEFER_EARLY)
    assert "Fixed 1 finding" not in cudalint("--no-cache", "--fix", ".", cwd=fixable).stderr
    (fixable / "a.go").write_text(DEFER_EARLY)
    (fixable / ".cudalint.toml").write_text("show-fixes = true\n")
    assert "1 x CL202 (defer-before-acquire)" in cudalint("--no-cache", "--fix", ".", cwd=fixable).stderr


@pytest.mark.parametrize(("config", "fixed"), [
    ('unfixable = ["CL202"]\n', False),
    ('unfixable = ["CL2"]\n', False),
    ('fixable = ["CL1"]\n', False),
    ('fixable = ["CL202"]\nunfixable = ["CL2"]\n', True),  # the more specific wins (ruff)
    ('fixable = ["CL2"]\nunfixable = ["CL202"]\n', False),
    ('unfixable = ["CL101"]\n', True),
])
def test_fixable_and_unfixable(fixable: Path, config: str, fixed: bool) -> None:
    (fixable / ".cudalint.toml").write_text(config)
    listed = cudalint("--no-cache", ".", cwd=fixable)
    assert ("CL202 [*]" in listed.stdout) == fixed, listed.stdout
    diff = cudalint("--no-cache", "--diff", ".", cwd=fixable)
    assert diff.exit_code == (1 if fixed else 0) and bool(diff.stdout) == fixed
    cudalint("--no-cache", "--fix", ".", cwd=fixable)
    assert ((fixable / "a.go").read_text() != DEFER_EARLY) == fixed


def test_fixable_must_name_rules(fixable: Path) -> None:
    (fixable / ".cudalint.toml").write_text('unfixable = ["ALL"]\n')
    run = cudalint("--no-cache", ".", cwd=fixable)
    assert run.exit_code == 2 and "unfixable" in run.stderr


# -- max-same-issues -------------------------------------------------------------


def test_max_same_issues_is_off_by_default_and_caps_when_asked(project: Path) -> None:
    body = "".join("\tC.cudaDeviceSynchronize()\n" for _ in range(5))
    (project / "gpu" / "a.go").write_text(CGO_FILE.replace("\tC.cudaDeviceSynchronize()\n", body))
    every = cudalint("--no-cache", "./...", cwd=project)
    assert every.stdout.count(" CL301 ") == 5 and "max-same-issues" not in every.stderr
    capped = cudalint("--no-cache", "--max-same-issues", "2", "./...", cwd=project)
    assert capped.exit_code == 1 and capped.stdout.count(" CL301 ") == 2
    assert "3 more findings with the same rule and message left out by max-same-issues = 2 (CL301)" in capped.stderr
    (project / ".cudalint.toml").write_text("max-same-issues = 1\n")
    assert cudalint("--no-cache", "./...", cwd=project).stdout.count(" CL301 ") == 1
    assert cudalint("--no-cache", "--max-same-issues", "0", "./...", cwd=project).stdout.count(" CL301 ") == 5
    (project / ".cudalint.toml").write_text("max-same-issues = -1\n")
    assert cudalint("--no-cache", "./...", cwd=project).exit_code == 2


# -- --clean-cache ---------------------------------------------------------------


def test_clean_cache_removes_only_tagged_caches(project: Path, tmp_path_factory, monkeypatch) -> None:
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("CUDALINT_CACHE_DIR", raising=False)
    assert cudalint("./...", cwd=project).exit_code == 1
    assert (project / ".cudalint_cache" / "CACHEDIR.TAG").is_file()
    (home / "cudalint").mkdir()
    (home / "cudalint" / "CACHEDIR.TAG").write_bytes((project / ".cudalint_cache" / "CACHEDIR.TAG").read_bytes())
    run = cudalint("--clean-cache", cwd=project)
    assert run.exit_code == 0, run.stderr
    assert not (project / ".cudalint_cache").exists() and not (home / "cudalint").exists()
    assert run.stderr.count("removed the cache") == 2
    assert "no cache to remove" in cudalint("--clean-cache", cwd=project).stderr
    # A directory that is not a cudalint cache is never removed.
    mine = project / "precious"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    named = cudalint("--clean-cache", "--cache-dir", "precious", cwd=project)
    assert named.exit_code == 2 and "not a cudalint cache" in named.stderr and (mine / "keep.txt").exists()
    (mine / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n# someone else's\n")
    assert cudalint("--clean-cache", "--cache-dir", "precious", cwd=project).exit_code == 2 and mine.exists()
    (project / ".cudalint_cache").symlink_to(mine, target_is_directory=True)
    cudalint("--clean-cache", cwd=project)
    assert (mine / "keep.txt").exists()


def test_clean_cache_is_a_flag_not_a_pattern(project: Path) -> None:
    run = cudalint("--clean-cache", "./...", cwd=project)
    assert run.exit_code == 2 and "takes no patterns" in run.stderr


# -- --show-settings -------------------------------------------------------------


def test_show_settings_says_which_configuration_and_why(project: Path) -> None:
    (project / ".cudalint.toml").write_text('select = ["CL3"]\nexclude = ["gen/**"]\n[per-file-ignores]\n"gpu/**" = ["CL302"]\n')
    (project / "mod").mkdir()
    (project / "mod" / ".cudalint.toml").write_text('ignore = ["CL301"]\nunfixable = ["CL101"]\n')
    (project / "mod" / "m.go").write_text(CGO_FILE)
    run = cudalint("--show-settings", "gpu/a.go", "mod/m.go", cwd=project)
    assert run.exit_code == 0, run.stderr
    first, second = run.stdout.split("\n\n")
    assert first.startswith("Settings for gpu/a.go\n  configuration:    .cudalint.toml\n")
    assert "select:           CL3   (configuration)" in first
    assert "'gpu/**' = CL302 (applies to this file)" in first
    assert "rules enabled:    CL301, CL303, CL304" in first
    assert "configuration:    mod/.cudalint.toml" in second and "nested below .cudalint.toml" in second
    assert "unfixable:        CL101   (configuration)" in second
    overridden = cudalint("--show-settings", "--select", "CL1", "gpu/a.go", cwd=project).stdout
    assert "select:           CL1   (--select)" in overridden
    isolated = cudalint("--show-settings", "--isolated", cwd=project).stdout
    assert "configuration:    (none)" in isolated and "--isolated" in isolated
    assert cudalint("--show-settings", "nowhere.go", cwd=project).exit_code == 2


# -- the progress line -----------------------------------------------------------


def test_the_progress_line_redraws_on_a_timer() -> None:
    import io
    import time

    from cudalint.progress import Progress

    stream = io.StringIO()
    progress = Progress(3, 0.0, stream=stream, redraw=0.05)
    time.sleep(0.5)  # no package completes: the line still moves
    progress.close()
    drawn = stream.getvalue()
    assert drawn.count("\rcudalint: 0/3 packages analysed (") >= 3, drawn
    assert drawn.endswith("\r\x1b[K")
    quiet = io.StringIO()
    Progress(3, None, stream=quiet, redraw=0.05).close()
    assert quiet.getvalue() == ""


def test_the_sdist_is_0_2_0_and_carries_the_changelog(tmp_path: Path) -> None:
    import tarfile

    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", "sdist", "-d", str(tmp_path)], cwd=root,
                   check=True, capture_output=True, timeout=300)
    (sdist,) = tmp_path.glob("*.tar.gz")
    assert sdist.name == "cudalint-0.2.0.tar.gz"
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
        info = archive.extractfile("cudalint-0.2.0/PKG-INFO").read().decode()
    assert "cudalint-0.2.0/CHANGELOG.md" in names and "\nVersion: 0.2.0\n" in info

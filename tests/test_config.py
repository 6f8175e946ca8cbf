"""Configuration: [tool.cudalint] in pyproject.toml or .cudalint.toml, found
walking up from the working directory; every key; clear errors (exit 2) for
unknown keys and bad values; command-line flags override the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import cudalint
from cudalint.globs import glob_regex

SOURCE = """package p

// #include <cuda_runtime_api.h>
import "C"

func f() {
	C.cudaDeviceSynchronize()
	_ = C.cudaDeviceReset()
}
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for directory in ("svc/gpu", "svc/gen", "legacy"):
        (tmp_path / directory).mkdir(parents=True)
        (tmp_path / directory / "a.go").write_text(SOURCE.replace("package p", f"package {directory.split('/')[-1]}"))
    return tmp_path


def findings(cwd: Path, *args: str) -> list[tuple[str, str, str]]:
    run = cudalint("--format", "json", *args, cwd=cwd)
    assert run.exit_code in (0, 1), run.stderr
    return [(f["path"], f["rule"], f["level"]) for f in json.loads(run.stdout)["findings"]]


def error(cwd: Path, *args: str) -> str:
    run = cudalint(*args, cwd=cwd)
    assert run.exit_code == 2 and run.stdout == "", (run.exit_code, run.stdout)
    assert "Traceback" not in run.stderr
    return run.stderr


def test_no_configuration_reports_everything(repo: Path) -> None:
    assert len(findings(repo)) == 6


def test_pyproject_found_walking_up_and_every_key_applies(repo: Path) -> None:
    (repo / "wrappers.toml").write_text(
        'family = "acme"\ndescription = "ACME wrapper"\nimport = "acme.example/gpu"\n'
        '[status]\ntype = "error"\nkind = "error"\nresult = "last"\n[status_calls]\nmatch = ["gpu.*"]\n'
    )
    (repo / "svc" / "gpu" / "w.go").write_text('package gpu\n\nimport "acme.example/gpu"\n\nfunc g() {\n\tgpu.Sync()\n}\n')
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n'
        "[tool.cudalint]\n"
        'ignore = ["CL3"]\n'
        'select = ["CL3", "CL1"]\n'
        'exclude = ["gen"]\n'
        'rules = ["wrappers.toml"]\n'
        "[tool.cudalint.level]\nCL302 = \"error\"\nCL3 = \"note\"\n"
        '[tool.cudalint.per-file-ignores]\n"legacy/**" = ["CL301"]\n'
    )
    # select = [CL3, CL1] and ignore = [CL3] leave only CL1, which finds nothing here.
    assert findings(repo / "svc") == []
    (repo / "pyproject.toml").write_text((repo / "pyproject.toml").read_text().replace('ignore = ["CL3"]\n', ""))
    assert findings(repo / "svc") == [
        ("gpu/a.go", "CL301", "note"),  # the longest level prefix wins: CL3 -> note, CL302 -> error
        ("gpu/a.go", "CL302", "error"),
        ("gpu/w.go", "CL301", "note"),  # taught by the rules file, named relative to pyproject.toml
    ]  # svc/gen is excluded
    assert findings(repo / "svc", "../...") == [
        ("../legacy/a.go", "CL302", "error"),  # per-file-ignores drops CL301 under legacy/
        ("gpu/a.go", "CL301", "note"),
        ("gpu/a.go", "CL302", "error"),
        ("gpu/w.go", "CL301", "note"),
    ]


def test_cudalint_toml_wins_over_pyproject_and_pyproject_without_table_is_passed_over(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.cudalint]\nignore = ["CL301"]\n')
    (repo / "svc" / "pyproject.toml").write_text('[project]\nname = "svc"\n')  # no [tool.cudalint]: keep walking
    assert {rule for _, rule, _ in findings(repo / "svc")} == {"CL302"}
    (repo / ".cudalint.toml").write_text('ignore = ["CL302"]\n')
    assert {rule for _, rule, _ in findings(repo / "svc")} == {"CL301"}


def test_command_line_overrides_the_file(repo: Path) -> None:
    (repo / ".cudalint.toml").write_text('select = ["CL302"]\nexclude = ["legacy", "gen"]\n')
    assert {(p, r) for p, r, _ in findings(repo)} == {("svc/gpu/a.go", "CL302")}
    assert {(p, r) for p, r, _ in findings(repo, "--select", "CL301")} == {("svc/gpu/a.go", "CL301")}
    # --exclude replaces the file's list: legacy/ comes back, svc/ goes.
    assert {(p, r) for p, r, _ in findings(repo, "--exclude", "svc")} == {("legacy/a.go", "CL302")}
    assert len(findings(repo, "--isolated")) == 6
    (repo / "other.toml").write_text('ignore = ["CL3"]\n')
    assert findings(repo, "--config", "other.toml") == []


def test_excluded_named_files_are_not_an_error(repo: Path) -> None:
    (repo / ".cudalint.toml").write_text('exclude = ["legacy/*.go"]\n')
    run = cudalint("legacy/a.go", cwd=repo)
    assert run.exit_code == 0 and run.stdout == "No findings (0 files analysed).\n"


@pytest.mark.parametrize("content, message", [
    ('selct = ["CL1"]\n', "unknown key 'selct' (did you mean 'select'?); the keys are c-include, exclude, fixable, ignore, knowledge, level, max-same-issues, per-file-ignores, preview, rules, select, show-fixes, unfixable"),
    ('select = "CL1"\n', "select: expected a list of strings, e.g. select = [\"CL1\", \"CL302\"], got 'CL1'"),
    ('select = []\n', "select: an empty list enables no rule"),
    ('ignore = ["CL9"]\n', "ignore: 'CL9' matches no rule"),
    ('ignore = ["E501"]\n', "ignore: 'E501' is not a rule ID or prefix"),
    ('[level]\nCL302 = "fatal"\n', "level.CL302: expected one of 'error', 'warning', 'note', got 'fatal'"),
    ('level = "error"\n', "level: expected a table of rule -> level"),
    ('rules = ["missing.toml"]\n', "rules: 'missing.toml': no such file"),
    ('exclude = [""]\n', "exclude: bad glob '': an empty pattern"),
    ('[per-file-ignores]\n"legacy/**" = "CL3"\n', "per-file-ignores.'legacy/**': expected a list of strings"),
    ("select = [\n", "invalid TOML"),
])
def test_bad_configuration_is_a_clear_error(repo: Path, content: str, message: str) -> None:
    (repo / ".cudalint.toml").write_text(content)
    stderr = error(repo / "svc")
    assert stderr.startswith("cudalint: error: ../.cudalint.toml: ") and message in stderr, stderr


def test_bad_pyproject_table_and_bad_rules_file(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[tool.cudalint]\nsurprise = 1\n')
    assert "pyproject.toml: [tool.cudalint]: unknown key 'surprise'" in error(repo)
    (repo / "pyproject.toml").write_text('[tool.cudalint]\nrules = ["bad.toml"]\n')
    (repo / "bad.toml").write_text('family = "x"\n')
    assert "bad.toml" in error(repo)
    assert "--config and --isolated" in cudalint("--config", "pyproject.toml", "--isolated", cwd=repo).stderr


@pytest.mark.parametrize("pattern, path, matches", [
    ("vendor", "a/vendor/x.go", True),
    ("vendor", "vendors/x.go", False),
    ("*_gen.go", "pkg/api_gen.go", True),
    ("internal/gen", "internal/gen/sub/a.go", True),
    ("internal/gen", "x/internal/gen/a.go", False),
    ("**/mocks", "mocks/m.go", True),
    ("**/mocks", "a/b/mocks/m.go", True),
    ("cmd/*/main.go", "cmd/x/main.go", True),
    ("cmd/*/main.go", "cmd/x/y/main.go", False),
    ("a/**/b.go", "a/b.go", True),
    ("a/**/b.go", "a/x/y/b.go", True),
    ("[!ab].go", "c.go", True),
    ("[!ab].go", "b.go", False),
    ("./gen/", "gen/a.go", True),
])
def test_glob_semantics(pattern: str, path: str, matches: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is matches


WRAPPER_KNOWLEDGE = '''family = "mywrap"
description = "an in-house wrapper"
import = "C"
[status]
type = "int"
success = ["0"]
[status_calls]
match = ["C.cudaDeviceSynchronize"]
'''


def test_knowledge_key_and_its_older_spelling_rules(repo: Path) -> None:
    (repo / "mine.toml").write_text(WRAPPER_KNOWLEDGE)
    for key in ("knowledge", "rules"):
        (repo / ".cudalint.toml").write_text(f'{key} = ["mine.toml"]\n')
        run = cudalint("--format", "json", "--no-cache", "./...", cwd=repo)
        assert run.exit_code == 1, run.stderr
    (repo / ".cudalint.toml").write_text('knowledge = ["mine.toml"]\nrules = ["mine.toml"]\n')
    assert "older spelling of `knowledge`" in error(repo)
    (repo / ".cudalint.toml").write_text('knowledge = ["missing.toml"]\n')
    assert "knowledge: 'missing.toml': no such file" in error(repo)


def test_knowledge_option_and_rules_alias(repo: Path) -> None:
    (repo / "bad.toml").write_text('family = "x"\n')
    for option in ("--knowledge", "--rules"):
        run = cudalint(option, "bad.toml", "--no-cache", "./...", cwd=repo)
        assert run.exit_code == 2 and "bad.toml" in run.stderr


def test_preview_key_must_be_a_boolean(repo: Path) -> None:
    (repo / ".cudalint.toml").write_text('preview = "yes"\n')
    assert "preview: expected true or false" in error(repo)
    (repo / ".cudalint.toml").write_text('preview = true\n')
    assert cudalint("--no-cache", "./...", cwd=repo).exit_code == 1


def test_a_tool_table_in_cudalint_toml_gets_a_hint(repo: Path) -> None:
    (repo / ".cudalint.toml").write_text('[tool.cudalint]\nselect = ["CL3"]\n')
    assert "takes the keys at its top level; [tool.cudalint] belongs in pyproject.toml" in error(repo)


def test_a_nested_modules_own_configuration_applies_to_its_files(tmp_path: Path) -> None:
    """pre-commit runs from the repository root and names staged files; the
    files of a nested module get that module's configuration."""
    (tmp_path / ".cudalint.toml").write_text('select = ["CL3"]\n')
    module = tmp_path / "svc"
    module.mkdir()
    (module / "go.mod").write_text("module example.com/svc\n\ngo 1.21\n")
    (module / ".cudalint.toml").write_text('ignore = ["CL301"]\n')
    (module / "a.go").write_text(SOURCE)
    (tmp_path / "b.go").write_text(SOURCE)
    assert {rule for _, rule, _ in findings(tmp_path, "--no-cache", "svc/a.go")} == {"CL302"}
    assert {rule for _, rule, _ in findings(tmp_path, "--no-cache", "b.go")} == {"CL301", "CL302"}
    # Staged files of both modules in one run: each file gets its own.
    both = findings(tmp_path, "--no-cache", "b.go", "svc/a.go")
    assert {(path, rule) for path, rule, _ in both} == {("b.go", "CL301"), ("b.go", "CL302"), ("svc/a.go", "CL302")}
    assert {(path, rule) for path, rule, _ in findings(tmp_path, "--no-cache", "./...", "svc/...")} == {
        ("b.go", "CL301"), ("b.go", "CL302"), ("svc/a.go", "CL302"),
    }


def test_each_modules_configuration_applies_its_own_excludes_and_knowledge(tmp_path: Path) -> None:
    """Two nested modules, each with its configuration: one excludes its
    generated file, the other turns a rule off; a run from the root over
    both honours each, and the root's configuration covers the rest."""
    (tmp_path / ".cudalint.toml").write_text('ignore = ["CL302"]\n')
    for name, config in (("a", 'exclude = ["gen_*.go"]\n'), ("b", 'ignore = ["CL3"]\n')):
        module = tmp_path / name
        module.mkdir()
        (module / "go.mod").write_text(f"module example.com/{name}\n\ngo 1.21\n")
        (module / ".cudalint.toml").write_text(config)
        (module / "x.go").write_text(SOURCE)
        (module / "gen_x.go").write_text(SOURCE.replace("func f", "func g"))
    (tmp_path / "root.go").write_text(SOURCE)
    found = {(path, rule) for path, rule, _ in findings(tmp_path, "--no-cache", "--all-modules", "./...")}
    assert ("root.go", "CL301") in found and ("root.go", "CL302") not in found
    assert ("a/x.go", "CL301") in found and ("a/x.go", "CL302") in found  # a's own configuration: nothing ignored
    assert not any(path == "a/gen_x.go" for path, _ in found)  # a excludes it
    assert not any(path.startswith("b/") for path, _ in found)  # b ignores CL3

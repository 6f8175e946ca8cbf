"""Inline suppressions: //cudalint:ignore (the line before or the end of the
line) and //cudalint:file-ignore, the required reason, CL001 for malformed
and unused directives, and --show-suppressed in every format.
(tests/fixtures/suppressions/ holds the annotated Go package.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import cudalint
from test_sarif import validate

HEAD = """package p

// #include <cuda_runtime_api.h>
import "C"

"""


def write(tmp_path: Path, body: str) -> Path:
    (tmp_path / "p.go").write_text(HEAD + body)
    return tmp_path


def reported(tmp_path: Path, *args: str) -> list[tuple[int, str, str]]:
    run = cudalint("--format", "json", *args, "p.go", cwd=tmp_path)
    assert run.exit_code in (0, 1), run.stderr
    return [(f["line"], f["rule"], f["message"]) for f in json.loads(run.stdout)["findings"]]


def test_line_before_and_end_of_line_suppress(tmp_path: Path) -> None:
    write(tmp_path, (
        "func f() {\n"
        "\t//cudalint:ignore CL301 reset right after\n"
        "\tC.cudaDeviceSynchronize()\n"
        "\tC.cudaDeviceSynchronize() //cudalint:ignore CL301 shutdown path\n"
        "\tC.cudaDeviceSynchronize()\n"
        "}\n"
    ))
    assert [(line, rule) for line, rule, _ in reported(tmp_path)] == [(10, "CL301")]


def test_a_directive_two_lines_above_does_not_reach(tmp_path: Path) -> None:
    write(tmp_path, (
        "func f() {\n"
        "\t//cudalint:ignore CL301 too far away\n"
        "\n"
        "\tC.cudaDeviceSynchronize()\n"
        "}\n"
    ))
    found = reported(tmp_path)
    assert [(line, rule) for line, rule, _ in found] == [(7, "CL001"), (9, "CL301")]
    assert "no CL301 finding on line 8" in found[0][2]


def test_file_ignore_by_prefix(tmp_path: Path) -> None:
    write(tmp_path, (
        "//cudalint:file-ignore CL3 generated bindings, checked by the caller\n\n"
        "func f() {\n\tC.cudaDeviceSynchronize()\n\t_ = C.cudaDeviceReset()\n}\n"
    ))
    assert reported(tmp_path) == []


@pytest.mark.parametrize("directive, problem", [
    ("//cudalint:ignore CL301", "a reason is required"),
    ("//cudalint:ignore CL301   // ", "a reason is required"),
    ("//cudalint:ignore", "blanket suppressions are not allowed"),
    ("//cudalint:ignoreCL301 why", "expected a space after 'cudalint:ignore'"),
    ("//cudalint:nolint CL301 why", "unknown directive 'cudalint:nolint'"),
    ("//cudalint:ignore XY12 why", "'XY12' is not a rule ID or prefix"),
    ("//cudalint:ignore CL301,CL9 why", "CL9 matches no rule"),
    ("//cudalint:ignore CL001 why", "names tool rules"),
    ("//cudalint:ignore CL301 CL302 why", "separate the rules with commas"),
])
def test_malformed_directives_are_cl001_and_suppress_nothing(tmp_path: Path, directive: str, problem: str) -> None:
    write(tmp_path, f"func f() {{\n\tC.cudaDeviceSynchronize() {directive}\n}}\n")
    found = sorted(reported(tmp_path))
    assert [(line, rule) for line, rule, _ in found] == [(7, "CL001"), (7, "CL301")]
    assert found[0][2].startswith("malformed suppression: ") and problem in found[0][2]


def test_cl001_points_at_the_unused_rule_in_the_directive(tmp_path: Path) -> None:
    write(tmp_path, "func f() {\n\tC.cudaDeviceSynchronize() //cudalint:ignore CL301,CL302 why\n}\n")
    run = cudalint("--format", "json", "p.go", cwd=tmp_path)
    (unused,) = [f for f in json.loads(run.stdout)["findings"] if f["rule"] == "CL001"]
    line = (HEAD.splitlines() + ["func f() {", "\tC.cudaDeviceSynchronize() //cudalint:ignore CL301,CL302 why"])[6]
    assert unused["column"] == line.index("CL302") + 1 and unused["end_column"] == unused["column"] + 5
    assert unused["message"].startswith("unused suppression: no CL302 finding on line 7; remove CL302 from the directive")


def test_directives_for_disabled_rules_are_not_unused(tmp_path: Path) -> None:
    write(tmp_path, (
        "func f() {\n"
        "\tC.cudaDeviceSynchronize() //cudalint:ignore CL301 why\n"
        "\t_ = C.cudaDeviceReset()   //cudalint:ignore CL302 why\n"
        "}\n"
    ))
    assert reported(tmp_path, "--select", "CL301,CL001") == []
    (tmp_path / ".cudalint.toml").write_text('[per-file-ignores]\n"p.go" = ["CL302"]\n')
    assert reported(tmp_path) == []
    # Without CL001 enabled, nothing about directives is reported at all.
    write(tmp_path, "func f() {\n\tC.cudaDeviceSynchronize() //cudalint:ignore\n}\n")
    assert [rule for _, rule, _ in reported(tmp_path, "--ignore", "CL001")] == ["CL301"]


def test_a_directive_in_a_package_without_gpu_code_is_still_checked(tmp_path: Path) -> None:
    (tmp_path / "p.go").write_text("package p\n\nfunc f() {} //cudalint:ignore CL301 nothing here\n")
    assert [rule for _, rule, _ in reported(tmp_path)] == ["CL001"]


def test_suppressed_findings_are_hidden_and_counted(tmp_path: Path) -> None:
    write(tmp_path, "func f() {\n\tC.cudaDeviceSynchronize() //cudalint:ignore CL301 shutdown path\n}\n")
    run = cudalint("p.go", cwd=tmp_path)
    assert run.exit_code == 0
    assert run.stdout == "No findings (1 file analysed); 1 suppressed by directives, shown by --show-suppressed.\n"
    shown = cudalint("--show-suppressed", "p.go", cwd=tmp_path)
    assert shown.exit_code == 0  # suppressed findings never fail the run
    assert shown.stdout.splitlines()[0].endswith("[suppressed: shutdown path]")


def test_show_suppressed_in_json_and_sarif(tmp_path: Path) -> None:
    write(tmp_path, "func f() {\n\tC.cudaDeviceSynchronize() //cudalint:ignore CL301 // shutdown path\n}\n")
    assert json.loads(cudalint("--format", "json", "p.go", cwd=tmp_path).stdout)["findings"] == []
    (finding,) = json.loads(cudalint("--format", "json", "--show-suppressed", "p.go", cwd=tmp_path).stdout)["findings"]
    assert finding["suppression"] == {
        "kind": "inSource", "justification": "shutdown path", "path": "p.go",
        "line": 7, "column": 28, "end_line": 7, "end_column": 28 + len("//cudalint:ignore CL301 // shutdown path"),
    }
    assert json.loads(cudalint("--format", "sarif", "p.go", cwd=tmp_path).stdout)["runs"][0]["results"] == []
    document = json.loads(cudalint("--format", "sarif", "--show-suppressed", "p.go", cwd=tmp_path).stdout)
    validate(document)
    (result,) = document["runs"][0]["results"]
    (suppression,) = result["suppressions"]
    assert suppression["kind"] == "inSource" and suppression["status"] == "accepted"
    assert suppression["justification"] == "shutdown path" and "state" not in suppression
    region = suppression["location"]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (7, 28)


@pytest.mark.parametrize("directive", [
    "\t//cudalint:ignore CL301 why\n\tC.cudaDeviceSynchronize()\n",
    "\tC.cudaDeviceSynchronize() //cudalint:ignore CL301 why\n",
])
def test_suppressing_a_finding_changes_no_fingerprint(tmp_path: Path, directive: str) -> None:
    body = "func f() {\n%s\tC.cudaDeviceSynchronize()\n}\n"
    write(tmp_path, body % "\tC.cudaDeviceSynchronize()\n")
    before = json.loads(cudalint("--format", "json", "p.go", cwd=tmp_path).stdout)["findings"]
    write(tmp_path, body % directive)
    (hidden, after) = json.loads(cudalint("--format", "json", "--show-suppressed", "p.go", cwd=tmp_path).stdout)["findings"]
    assert [f["fingerprint"].split(":")[1] for f in before] == ["1", "2"]
    assert hidden["suppression"] is not None and after["suppression"] is None
    assert [hidden["fingerprint"], after["fingerprint"]] == [f["fingerprint"] for f in before]


def test_reason_required_message_names_the_users_rule(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text(
        'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n\nfunc f() {\n\tC.cudaDeviceSynchronize() //cudalint:ignore CL301\n}\n'
    )
    run = cudalint("--no-cache", "--format", "json", "a.go", cwd=tmp_path)
    messages = [f["message"] for f in json.loads(run.stdout)["findings"] if f["rule"] == "CL001"]
    assert messages and "//cudalint:ignore CL301 <why this is fine>" in messages[0]

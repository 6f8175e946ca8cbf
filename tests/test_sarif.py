"""SARIF output: valid against the OASIS schema and GitHub's copy, with what
code scanning needs (rules, levels, relative URIs, UTF-16 columns, stable
fingerprints, notifications for files that could not be parsed)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from clirun import cudalint

SCHEMAS = Path(__file__).parent / "schemas"

SOURCE = """package p

// #include <cuda_runtime_api.h>
import "C"

func sync() {
	/* héllo → */ C.cudaDeviceSynchronize()
}
"""


def validate(document: dict) -> None:
    for name in ("sarif-schema-2.1.0.json", "sarif-schema-2.1.0.github.json"):
        schema = json.loads((SCHEMAS / name).read_text())
        validator_class = jsonschema.validators.validator_for(schema)
        errors = sorted(validator_class(schema).iter_errors(document), key=lambda e: list(e.path))
        assert not errors, f"{name}: " + "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def sarif(project: Path, *args: str) -> dict:
    run = cudalint("--format", "sarif", *args, cwd=project)
    assert run.exit_code in (0, 1), run.stderr
    return json.loads(run.stdout)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.go").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "pkg" / "broken.go").write_text("package p\n\nfunc f( {\n")
    return tmp_path


def test_validates_against_both_schemas(project: Path) -> None:
    validate(sarif(project))


def test_empty_run_validates_too(tmp_path: Path) -> None:
    (tmp_path / "p.go").write_text("package p\n")
    document = sarif(tmp_path)
    validate(document)
    assert document["runs"][0]["results"] == []


def test_run_metadata_and_rules(project: Path) -> None:
    document = sarif(project)
    assert document["version"] == "2.1.0" and document["$schema"].endswith("sarif-2.1.0.json")
    run = document["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "cudalint" and driver["version"]
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert rule_ids == sorted(rule_ids) and {"CL301", "CL302"} <= set(rule_ids)
    rule = driver["rules"][rule_ids.index("CL301")]
    assert rule["name"] == "status-discarded"
    assert rule["defaultConfiguration"]["level"] == "error"
    assert "## Why is this bad?" in rule["help"]["markdown"] and rule["help"]["text"]
    assert rule["shortDescription"]["text"] and rule["properties"]["tags"]
    assert run["columnKind"] == "utf16CodeUnits"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"


def test_result_location_and_utf16_columns(project: Path) -> None:
    (result,) = sarif(project)["runs"][0]["results"]
    assert result["ruleId"] == "CL301" and result["level"] == "error"
    rules = sarif(project)["runs"][0]["tool"]["driver"]["rules"]
    assert rules[result["ruleIndex"]]["id"] == "CL301"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "pkg/a.go", "uriBaseId": "%SRCROOT%"}
    line = SOURCE.splitlines()[6]
    expected_start = len(line[: line.index("C.cuda")].encode("utf-16-le")) // 2 + 1
    assert location["region"]["startLine"] == 7
    assert location["region"]["startColumn"] == expected_start  # bytes would be 3 more
    assert location["region"]["endColumn"] == expected_start + len("C.cudaDeviceSynchronize()")


def test_explicit_warning_level_survives_serialisation(project: Path) -> None:
    (project / "pkg" / "a.go").write_text(SOURCE.replace("/* héllo → */ C.", "_ = C."), encoding="utf-8")
    (result,) = sarif(project)["runs"][0]["results"]
    assert result["ruleId"] == "CL302" and result["level"] == "warning"


def test_unparsable_files_are_tool_notifications(project: Path) -> None:
    invocation = sarif(project)["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is True
    (note,) = invocation["toolExecutionNotifications"]
    assert note["level"] == "warning" and "syntax error" in note["message"]["text"]
    place = note["locations"][0]["physicalLocation"]
    assert place["artifactLocation"]["uri"] == "pkg/broken.go" and place["region"]["startLine"] == 3


def test_fingerprints_are_stable_when_lines_are_added_above(project: Path) -> None:
    before = sarif(project)["runs"][0]["results"][0]
    (project / "pkg" / "a.go").write_text(SOURCE.replace("import \"C\"\n", "import \"C\"\n\n// a comment\n\n"), encoding="utf-8")
    after = sarif(project)["runs"][0]["results"][0]
    assert after["locations"][0]["physicalLocation"]["region"]["startLine"] == 10
    assert before["partialFingerprints"] == after["partialFingerprints"]
    assert before["partialFingerprints"]["primaryLocationLineHash"].endswith(":1")


def test_output_file_option(project: Path) -> None:
    run = cudalint("--format", "sarif", "--output", "cudalint.sarif", cwd=project)
    assert run.exit_code == 1 and run.stdout == ""
    validate(json.loads((project / "cudalint.sarif").read_text()))


def test_uris_are_percent_encoded_and_outside_files_absolute(tmp_path: Path) -> None:
    odd = tmp_path / "root" / "my dir"
    odd.mkdir(parents=True)
    (odd / "a b%20#1.go").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "outside.go").write_text(SOURCE.replace("func sync", "func other"), encoding="utf-8")
    document = sarif(tmp_path / "root", "./...", "../outside.go")
    validate(document)
    uris = sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in document["runs"][0]["results"])
    assert uris == [(tmp_path / "outside.go").resolve().as_uri(), "my%20dir/a%20b%2520%231.go"]


LEAK = """package p

// #include <cuda_runtime_api.h>
import "C"

import (
	"errors"
	"unsafe"
)

func alloc(n C.size_t) error {
	var d unsafe.Pointer
	if st := C.cudaMalloc(&d, n); st != C.cudaSuccess {
		return errors.New("alloc")
	}
	if st := C.cudaMemset(d, 0, n); st != C.cudaSuccess {
		return errors.New("memset")
	}
	defer C.cudaFree(d)
	return nil
}
"""


def test_leak_path_is_a_code_flow(tmp_path: Path) -> None:
    (tmp_path / "leak.go").write_text(LEAK)
    document = sarif(tmp_path)
    validate(document)
    (result,) = document["runs"][0]["results"]
    assert result["ruleId"] == "CL101"
    flow = result["codeFlows"][0]["threadFlows"][0]["locations"]
    steps = [(step["location"]["physicalLocation"]["region"]["startLine"], step["location"]["message"]["text"]) for step in flow]
    assert steps == [
        (13, "device memory acquired by C.cudaMalloc"),
        (13, "`st != C.cudaSuccess` is false"),
        (16, "`st != C.cudaSuccess` is true"),
        (17, "d is still held here"),
    ]


def test_related_locations_are_linked_from_the_message(tmp_path: Path) -> None:
    (tmp_path / "leak.go").write_text(LEAK)
    (result,) = sarif(tmp_path)["runs"][0]["results"]
    text = result["message"]["text"]
    assert "(line 13)" in text  # the finding's own line is not a link
    links = re.findall(r"\[line (\d+)\]\((\d+)\)", text)
    assert links and ("17", "1") in links
    related = {location["id"]: location for location in result["relatedLocations"]}
    for line, number in links:
        location = related[int(number)]
        assert location["physicalLocation"]["region"]["startLine"] == int(line)
        assert location["physicalLocation"]["artifactLocation"] == {"uri": "leak.go", "uriBaseId": "%SRCROOT%"}
        assert location["message"]["text"]
        assert location["physicalLocation"]["region"]["startColumn"] >= 1  # a real span, not a bare line
    assert related[1]["message"]["text"] == "d is still held here"
    defer = related[2]["physicalLocation"]["region"]
    assert (defer["startLine"], defer["startColumn"], defer["endLine"]) == (19, 2, 19)
    assert related[2]["message"]["text"] == "the defer"
    assert set(related) == {int(number) for _, number in links}


def test_linked_messages_escape_literal_brackets() -> None:
    from cudalint.reporters.sarif import _escape

    assert _escape(r"s[0] and a\[b]") == r"s\[0\] and a\\\[b\]"


def test_every_rule_is_described_in_full(project: Path) -> None:
    from cudalint.checks import all_rules

    driver = sarif(project)["runs"][0]["tool"]["driver"]
    assert driver["semanticVersion"] == driver["version"]
    assert [rule["id"] for rule in driver["rules"]] == [rule.id for rule in all_rules()]
    for descriptor, rule in zip(driver["rules"], all_rules()):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert rule.description.startswith(descriptor["fullDescription"]["text"].rstrip("…")) and len(rule.description) > len(rule.summary) / 2
        assert descriptor["help"]["text"] == rule.doc and descriptor["help"]["markdown"] == rule.markdown()
        assert descriptor["defaultConfiguration"]["level"] == rule.level.value
        # The rule's tags first (then `security` and a CWE for memory-safety rules), and its precision.
        assert descriptor["properties"]["tags"][: len(rule.tags)] == list(rule.tags)
        assert set(descriptor["properties"]) <= {"tags", "precision", "security-severity"}


def test_configured_levels_are_result_levels_and_configuration_overrides(project: Path) -> None:
    (project / ".cudalint.toml").write_text('[level]\nCL301 = "warning"\n')
    document = sarif(project)
    validate(document)
    run = document["runs"][0]
    (result,) = run["results"]
    assert result["ruleId"] == "CL301" and result["level"] == "warning"
    (override,) = run["invocations"][0]["ruleConfigurationOverrides"]
    assert override["configuration"]["level"] == "warning"
    assert run["tool"]["driver"]["rules"][override["descriptor"]["index"]]["id"] == "CL301"
    assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["defaultConfiguration"]["level"] == "error"


def test_uris_are_relative_to_the_repository_root(project: Path) -> None:
    (project / ".git").mkdir()  # what marks the repository root
    document = sarif(project / "pkg", ".")
    validate(document)
    run = document["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    (result,) = run["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "pkg/a.go", "uriBaseId": "%SRCROOT%"}
    note = run["invocations"][0]["toolExecutionNotifications"][0]
    assert note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/broken.go"


def test_rule_descriptions_fit_github_limits(project: Path) -> None:
    """GitHub code scanning documents 1,024 characters for a rule's
    descriptions; CL401's first paragraph is longer and must be cut at a
    sentence."""
    from cudalint.checks import rule_by_id

    assert len(rule_by_id("CL401").description) > 1024  # what the limit is about
    for rule in sarif(project)["runs"][0]["tool"]["driver"]["rules"]:
        full = rule["fullDescription"]["text"]
        assert len(full) <= 1024 and len(rule["shortDescription"]["text"]) <= 1024, rule["id"]
        whole = rule_by_id(rule["id"]).description
        assert full == whole if len(whole) <= 1024 else (full.endswith((".", "…")) and whole.startswith(full.rstrip("…")))


def test_github_hard_limits_are_never_exceeded(monkeypatch, tmp_path: Path) -> None:
    """Results per run (25,000) and thread-flow locations per result
    (10,000): beyond them GitHub rejects the whole file. The limits are
    lowered here to keep the test small; the logic is the same."""
    from cudalint import check
    from cudalint.checks import all_rules
    from cudalint.reporters import Report
    from cudalint.reporters import sarif as writer

    (tmp_path / "leak.go").write_text(LEAK)
    (tmp_path / "more.go").write_text(SOURCE.replace("package p", "package p", 1))
    project = tmp_path
    result = check(["./..."], base=project)
    assert len(result.findings) > 1 and any(f.steps for f in result.findings)
    monkeypatch.setattr(writer, "MAX_RESULTS", 1)
    monkeypatch.setattr(writer, "MAX_FLOW_STEPS", 2)
    report = Report(result, {r.id: r for r in all_rules()}, "0", project, project)
    document = json.loads(writer.render_sarif(report))
    validate(document)
    run = document["runs"][0]
    assert len(run["results"]) == 1 and run["results"][0]["level"] == "error"
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert any(f"{len(result.findings) - 1} findings of the lowest levels are left out" in n["message"]["text"] for n in notes)
    long_flows = [f for f in result.findings if len(f.steps) > 2]
    monkeypatch.setattr(writer, "MAX_RESULTS", 25_000)
    document = json.loads(writer.render_sarif(report))
    flows = [len(flow["threadFlows"][0]["locations"]) for r in document["runs"][0]["results"] for flow in r.get("codeFlows", [])]
    assert long_flows and flows and max(flows) == 2


def test_no_url_is_a_guess(project: Path) -> None:
    """Issue 12, defect 6: the only URL the tool may emit is the project's
    home, one constant, None until a public home exists."""
    import cudalint

    driver = sarif(project)["runs"][0]["tool"]["driver"]
    assert cudalint.HOME is None and "informationUri" not in driver
    assert "pypi.org" not in json.dumps(driver)

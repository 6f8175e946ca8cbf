"""Issue 24, the report side: `--format github` loses no finding (text
lines besides the annotations, a Markdown step summary), reports create
their directories, XML reports stay well-formed whatever the file names and
carry the files cudalint could not analyse, SARIF rules say their precision
and security severity, runs their automationDetails, and --statistics is
never silently ignored."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from clirun import CGO_FILE, cudalint
from test_sarif import validate

CALL = "\tC.cudaDeviceSynchronize()\n"


def many(count: int) -> str:
    """A cgo file with `count` CL301 findings (one per function)."""
    head = 'package p\n\n// #include <cuda_runtime_api.h>\nimport "C"\n'
    return head + "".join(f"\nfunc f{i}() {{\n{CALL}}}\n" for i in range(count))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "a.go").write_text(CGO_FILE)
    return tmp_path


# -- item 2: --format github ---------------------------------------------------


def test_github_format_prints_every_finding_as_text_too(tmp_path: Path) -> None:
    """The log shows no `::` line and GitHub shows ten annotations a level:
    with 13 findings each is also a text line, and the cap is said."""
    (tmp_path / "p.go").write_text(many(13))
    run = cudalint("--no-cache", "--format", "github", ".", cwd=tmp_path)
    assert run.exit_code == 1
    lines = run.stdout.splitlines()
    annotations = [line for line in lines if line.startswith("::error file=p.go,")]
    texts = [line for line in lines if re.fullmatch(r"p\.go:\d+:2: CL301 .*", line)]
    assert len(annotations) == len(texts) == 13
    lines_of = sorted(int(line.split(",")[1].removeprefix("line=")) for line in annotations)
    assert sorted(int(line.split(":")[1]) for line in texts) == lines_of
    assert "GitHub shows at most 10 error and 10 warning annotations per step; this run has 13 errors" in run.stdout
    assert lines[-1].startswith("Found 13 findings")
    quiet = cudalint("--no-cache", "--format", "github", "-q", ".", cwd=tmp_path).stdout.splitlines()
    assert len(quiet) == 26 and not any(line.startswith(("Found", "GitHub shows")) for line in quiet)


def test_github_step_summary_is_appended_as_markdown(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = project / "step-summary.md"
    summary.write_text("an earlier step's summary\n")
    odd = project / "gpu" / "we|ird_[x].go"
    odd.write_text(CGO_FILE)
    (project / "gpu" / "broken.go").write_text("package p\n\nfunc g( {\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "owner/repo")
    monkeypatch.setenv("GITHUB_SHA", "0123abc")
    (project / ".git").mkdir()  # the repository root: links name files relative to it
    assert cudalint("--no-cache", "--format", "github", "./...", cwd=project).exit_code == 1
    text = summary.read_text()
    assert text.startswith("an earlier step's summary\n## cudalint\n")  # appended, never replaced
    assert "Found 2 findings (CL301: 2): 2 errors; 3 files analysed." in text
    assert "| :x: error | CL301 status-discarded | [gpu/a.go:7:2](https://github.com/owner/repo/blob/0123abc/gpu/a.go#L7) |" in text
    # A pipe or brackets in a file name neither end the cell nor make a link.
    assert "[gpu/we\\|ird\\_\\[x\\].go:7:2](https://github.com/owner/repo/blob/0123abc/gpu/we%7Cird_%5Bx%5D.go#L7)" in text
    rows = [line for line in text.splitlines() if line.startswith("| :x:")]
    assert len(rows) == 2 and all(len(re.findall(r"(?<!\\)\|", row)) == 5 for row in rows)
    assert "- gpu/broken.go:3:1: syntax error" in text
    # Other formats leave it alone; the github format to a file writes it too.
    before = summary.read_text()
    assert cudalint("--no-cache", "--format", "json", "./...", cwd=project).exit_code == 1
    assert summary.read_text() == before
    assert cudalint("--no-cache", "--format", "github:gh.txt", "--format", "text", "./...", cwd=project).exit_code == 1
    assert summary.read_text().count("## cudalint") == 2


def test_step_summary_never_writes_into_an_analysed_go_file(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project / "gpu" / "a.go"))
    run = cudalint("--no-cache", "--format", "github", "./...", cwd=project)
    assert run.exit_code == 2 and "GITHUB_STEP_SUMMARY names a Go source file this run analyses" in run.stderr
    assert (project / "gpu" / "a.go").read_text() == CGO_FILE


def test_an_unwritable_step_summary_is_a_warning(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project / "no" / "such" / "dir" / "summary.md"))
    run = cudalint("--no-cache", "--format", "github", "./...", cwd=project)
    assert run.exit_code == 1 and "::error file=gpu/a.go" in run.stdout
    assert "cudalint: warning: cannot write the step summary to" in run.stderr


# -- item 5: reports create their directories ---------------------------------


def test_reports_create_missing_parent_directories(project: Path) -> None:
    run = cudalint("--no-cache", "--format=sarif:out/x.sarif", "./...", cwd=project)
    assert run.exit_code == 1, run.stderr
    validate(json.loads((project / "out" / "x.sarif").read_text()))
    run = cudalint("--no-cache", "--format", "json", "-o", "deep/er/report.json", "./...", cwd=project)
    assert run.exit_code == 1, run.stderr
    assert json.loads((project / "deep" / "er" / "report.json").read_text())["summary"]["findings"] == 1
    (project / "file").write_text("")
    run = cudalint("--no-cache", "--format", "junit:file/x.xml", "./...", cwd=project)
    assert run.exit_code == 2 and "cannot write file/x.xml" in run.stderr


# -- item 6: XML reports -------------------------------------------------------


def test_xml_reports_stay_well_formed_with_control_characters_in_file_names(project: Path) -> None:
    (project / "gpu" / "x\x01y\x1b.go").write_text(CGO_FILE)
    for fmt in ("checkstyle", "junit"):
        run = cudalint("--no-cache", "--format", fmt, "./...", cwd=project)
        assert run.exit_code == 1, run.stderr
        root = ElementTree.fromstring(run.stdout)  # ill-formed XML raises here
        names = {element.get("name") for element in root.iter("file")} | {element.get("file") for element in root.iter("testcase")}
        assert "gpu/x\\x01y\\x1b.go" in names, (fmt, names)


def test_xml_text_replaces_every_character_xml_forbids() -> None:
    from cudalint.reporters.xmltext import attribute, clean, content

    assert clean("a\x00b\x08\x0b\x0c\x1f\ufffe\uffff\udcff\tok\n") == "a\\x00b\\x08\\x0b\\x0c\\x1f\\ufffe\\uffff\\udcff\tok\n"
    assert clean("é → 𝄞 \x7f") == "é → 𝄞 \x7f"  # allowed (U+007F is discouraged, not forbidden)
    ElementTree.fromstring(f"<a b={attribute(chr(1) + 'x<&>' + chr(10))}>{content(chr(0) + 'y' + chr(13))}</a>")


@pytest.fixture
def broken(project: Path) -> Path:
    (project / "gpu" / "broken.go").write_text("package p\n\nfunc g( {\n")
    return project


def test_checkstyle_reports_notifications_as_errors(broken: Path) -> None:
    root = ElementTree.fromstring(cudalint("--no-cache", "--format", "checkstyle", "./...", cwd=broken).stdout)
    errors = {(file.get("name"), error.get("source"), error.get("severity"), error.get("line"))
              for file in root.findall("file") for error in file.findall("error")}
    assert errors == {
        ("gpu/a.go", "cudalint.CL301", "error", "7"),
        ("gpu/broken.go", "cudalint.syntax-error", "error", "3"),
    }


def test_junit_reports_notifications_as_errors_and_counts_them(broken: Path) -> None:
    root = ElementTree.fromstring(cudalint("--no-cache", "--format", "junit", "./...", cwd=broken).stdout)
    for element in (root, root.find("testsuite")):
        assert (element.get("tests"), element.get("failures"), element.get("errors")) == ("2", "1", "1")
    (case,) = [case for case in root.iter("testcase") if case.find("error") is not None]
    assert case.get("file") == "gpu/broken.go" and case.find("error").get("type") == "syntax-error"
    assert "syntax error" in case.find("error").get("message")


def test_gitlab_reports_notifications_as_issues(broken: Path) -> None:
    issues = json.loads(cudalint("--no-cache", "--format", "gitlab", "./...", cwd=broken).stdout)
    (note,) = [issue for issue in issues if issue["check_name"] == "cudalint/syntax-error"]
    assert note["severity"] == "major" and note["location"] == {"path": "gpu/broken.go", "lines": {"begin": 3}}
    assert "syntax error" in note["description"] and len(note["fingerprint"]) == 64
    assert len({issue["fingerprint"] for issue in issues}) == len(issues) == 2


# -- item 7: SARIF rule properties and automationDetails; --statistics ---------


def test_sarif_rules_carry_precision_and_security_severity(project: Path) -> None:
    from cudalint.checks import all_rules
    from cudalint.reporters.sarif import PRECISION

    assert set(PRECISION) == {rule.id for rule in all_rules()}  # a new rule needs a precision
    document = json.loads(cudalint("--no-cache", "--format", "sarif", "./...", cwd=project).stdout)
    validate(document)
    rules = {rule["id"]: rule for rule in document["runs"][0]["tool"]["driver"]["rules"]}
    for rule_id, descriptor in rules.items():
        properties = descriptor["properties"]
        assert properties["precision"] in ("very-high", "high", "medium", "low"), rule_id
        if "security-severity" in properties:
            # GitHub reads a number in a string, for rules tagged security.
            assert 0.0 < float(properties["security-severity"]) <= 10.0 and "security" in properties["tags"], rule_id
            assert any(re.fullmatch(r"external/cwe/cwe-\d+", tag) for tag in properties["tags"]), rule_id
    assert rules["CL301"]["properties"]["precision"] == "very-high"
    assert float(rules["CL104"]["properties"]["security-severity"]) >= 7.0  # use after release
    assert "security-severity" not in rules["CL101"]["properties"]  # a leak is not a memory-safety hole
    assert "security-severity" not in rules["CL505"]["properties"]  # retired


def test_sarif_runs_name_their_category_in_automation_details(project: Path) -> None:
    document = json.loads(cudalint("--no-cache", "--format", "sarif", "./...", cwd=project).stdout)
    assert document["runs"][0]["automationDetails"] == {"id": "cudalint/"}
    document = json.loads(cudalint("--no-cache", "--format", "sarif", "--sarif-category", "gpu/kernels", "./...", cwd=project).stdout)
    assert document["runs"][0]["automationDetails"] == {"id": "gpu/kernels/"}
    validate(document)


def test_statistics_in_the_json_format(project: Path) -> None:
    (project / "gpu" / "b.go").write_text(many(3))
    run = cudalint("--no-cache", "--statistics", "--format", "json", "./...", cwd=project)
    assert run.exit_code == 1
    document = json.loads(run.stdout)
    assert document["statistics"] == [
        {"rule": "CL301", "name": "status-discarded", "level": "error", "count": 4, "fixable": 0},
    ]
    assert "findings" not in document and document["summary"]["findings"] == 4


def test_statistics_with_a_format_that_has_no_such_form_is_refused(project: Path) -> None:
    for fmt in ("sarif", "github", "gitlab", "checkstyle", "junit"):
        run = cudalint("--no-cache", "--statistics", "--format", fmt, "./...", cwd=project)
        assert run.exit_code == 2, fmt
        assert f"--statistics prints the counts per rule in the text or json format, and {fmt} has no such form" in run.stderr
    # Alongside a text report, another format goes to a file whole.
    run = cudalint("--no-cache", "--statistics", "--format", "sarif:x.sarif", "--format", "text", "./...", cwd=project)
    assert run.exit_code == 1 and run.stdout.startswith("1  CL301  status-discarded  [error]")
    assert len(json.loads((project / "x.sarif").read_text())["runs"][0]["results"]) == 1


def test_an_empty_sarif_category_is_refused(project: Path) -> None:
    for value in ("", " ", "/"):
        run = cudalint("--no-cache", "--format", "sarif", "--sarif-category", value, "./...", cwd=project)
        assert run.exit_code == 2 and "--sarif-category" in run.stderr and "names no category" in run.stderr, value

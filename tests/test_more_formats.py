"""GitLab code quality, checkstyle and JUnit XML. No schema is shipped for
these formats; each test checks what the format's published description
requires (written from GitLab's code quality report documentation, the
checkstyle XML format and the JUnit XML conventions CI systems read), with
validators of our own."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from clirun import CGO_FILE, cudalint


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "a.go").write_text(CGO_FILE)
    return tmp_path


def expected(project: Path) -> list[dict]:
    return json.loads(cudalint("--no-cache", "--format", "json", "./...", cwd=project).stdout)["findings"]


def test_gitlab_code_quality(project: Path) -> None:
    run = cudalint("--no-cache", "--format", "gitlab", "./...", cwd=project)
    assert run.exit_code == 1
    issues = json.loads(run.stdout)
    findings = expected(project)
    assert isinstance(issues, list) and len(issues) == len(findings) > 0
    for issue, finding in zip(issues, findings):
        assert isinstance(issue["description"], str) and issue["description"]
        assert issue["check_name"] == finding["rule"]
        assert isinstance(issue["fingerprint"], str) and len(issue["fingerprint"]) == 64
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert issue["location"]["path"] == finding["path"] and not issue["location"]["path"].startswith("/")
        assert issue["location"]["lines"]["begin"] == finding["line"] >= 1
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)


def test_checkstyle(project: Path) -> None:
    run = cudalint("--no-cache", "--format", "checkstyle", "./...", cwd=project)
    root = ElementTree.fromstring(run.stdout)
    assert root.tag == "checkstyle"
    errors = [(file.get("name"), error) for file in root.findall("file") for error in file.findall("error")]
    findings = expected(project)
    assert [(name, int(error.get("line")), error.get("source")) for name, error in errors] == [
        (f["path"], f["line"], f"cudalint.{f['rule']}") for f in findings
    ]
    assert all(error.get("severity") in ("error", "warning", "info", "ignore") and error.get("message") for _, error in errors)


def test_junit(project: Path, tmp_path: Path) -> None:
    run = cudalint("--no-cache", "--format", "junit", "./...", cwd=project)
    root = ElementTree.fromstring(run.stdout)
    suite = root.find("testsuite")
    findings = expected(project)
    assert root.tag == "testsuites" and suite is not None
    cases = suite.findall("testcase")
    assert int(suite.get("failures")) == len(cases) == len(findings)
    assert all(case.find("failure") is not None and case.get("classname").startswith("cudalint.") for case in cases)
    (tmp_path / "clean").mkdir()
    (tmp_path / "clean" / "c.go").write_text("package c\n")
    clean = ElementTree.fromstring(cudalint("--no-cache", "--format", "junit", "./...", cwd=tmp_path / "clean").stdout)
    assert clean.find("testsuite").get("failures") == "0" and len(clean.find("testsuite").findall("testcase")) == 1

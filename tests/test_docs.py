"""Rule documentation: docs/rules.md is generated from the catalog and kept in
sync; --list-rules and --explain cover every rule; every rule's documentation
has the four sections."""

from __future__ import annotations

from pathlib import Path

import pytest

from clirun import cudalint
from cudalint.docs import COMMAND, anchor, rules_markdown
from cudalint.checks import all_rules

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")


def test_docs_rules_md_is_in_sync_with_the_catalog() -> None:
    expected = rules_markdown(all_rules())
    actual = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert actual == expected, f"docs/rules.md is out of date: regenerate it with `{COMMAND}` (from the repository root)"


def test_docs_rules_md_has_a_row_and_a_section_per_rule() -> None:
    text = rules_markdown(all_rules())
    for rule in all_rules():
        assert f"| [{rule.id}](#{anchor(rule)}) | {rule.name} | {rule.level.value} |" in text
        assert f"\n## {rule.id} {rule.name}\n" in text
    assert anchor(all_rules()[0]) == f"{all_rules()[0].id.lower()}-{all_rules()[0].name}"


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.id)
def test_every_rule_is_documented(rule) -> None:
    if rule.retired:
        # A retired rule says so, and why, in its own section and summary.
        assert rule.section("Retired") and "retired" in rule.summary.lower(), f"{rule.id} does not say why it is retired"
        return
    for section in SECTIONS:
        assert section in rule.doc, f"{rule.id} lacks {section!r}"
        assert rule.section(section[3:]), f"{rule.id}: {section!r} is empty"
    assert "```go" in rule.section("Example"), f"{rule.id}: the example is not Go code"
    assert rule.summary and rule.tags


def test_list_rules_and_explain_cover_every_rule(tmp_path: Path) -> None:
    listing = cudalint("--list-rules", cwd=tmp_path).stdout.splitlines()
    rows = [line.split(None, 3) for line in listing[1:]]
    assert [(r[0], r[1], r[2]) for r in rows] == [(r.id, r.name, r.level.value) for r in all_rules()]
    for rule in all_rules():
        explained = cudalint("--explain", rule.id.lower(), cwd=tmp_path)
        assert explained.exit_code == 0 and explained.stdout == rule.markdown()


def test_docs_module_prints_the_file(capsys) -> None:
    from cudalint.docs import main

    main()
    assert capsys.readouterr().out == rules_markdown(all_rules())


def test_readme_rule_table_is_generated_and_current() -> None:
    from cudalint.docs import README_COMMAND, TABLE_END, TABLE_START, readme_table

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start, end = readme.index(TABLE_START), readme.index(TABLE_END) + len(TABLE_END)
    assert readme[start:end] == readme_table(all_rules()), f"README.md's rule table is out of date: run `{README_COMMAND}`"
    for rule in all_rules():
        if not rule.retired:  # the table lists the rules that can report
            assert f"[`{rule.id}`](docs/rules.md#{anchor(rule)})" in readme


def test_preview_rules_run_only_when_asked_for() -> None:
    from dataclasses import replace

    from cudalint.catalog import select_rules

    rules = [replace(rule, preview=rule.id == "CL101") if rule.id in ("CL101", "CL102") else rule for rule in all_rules()]
    assert "CL101" not in select_rules(rules, ("CL",), ())
    assert "CL101" not in select_rules(rules, ("CL1",), ())
    assert "CL101" in select_rules(rules, ("CL101",), ())  # selected by its full ID
    assert "CL101" in select_rules(rules, ("CL",), (), preview=True)
    assert "CL102" in select_rules(rules, ("CL1",), ())

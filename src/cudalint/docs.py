"""The rule reference, docs/rules.md, generated from the rule catalog so that
it cannot drift from `cudalint --explain`, `--list-rules` and the SARIF rule
help. Regenerate it after adding or changing a rule:

    python -m cudalint.docs > docs/rules.md

(tests/test_docs.py fails while the file is out of date.)
"""

from __future__ import annotations

import re
import sys

from cudalint.catalog import Rule

COMMAND = "python -m cudalint.docs > docs/rules.md"


def anchor(rule: Rule) -> str:
    """GitHub's heading anchor for `## CL101 leak-on-path`."""
    return re.sub(r"[^a-z0-9 _-]", "", f"{rule.id} {rule.name}".lower()).replace(" ", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _demote_headings(doc: str) -> str:
    """`## What it does` becomes `### What it does` under the rule's own
    heading; lines inside code blocks are left alone."""
    out, fenced = [], False
    for line in doc.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#+ ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def rules_markdown(rules: list[Rule]) -> str:
    lines = [
        "# cudalint rules",
        "",
        f"<!-- Generated from the rule catalog by `{COMMAND}`; do not edit by hand. -->",
        "",
        "Every rule cudalint reports, with its default level. `cudalint --list-rules` prints",
        "this table and `cudalint --explain CL101` one rule's section. Levels can be",
        "changed per rule in the configuration (`[tool.cudalint.level]`), and findings",
        "suppressed with `//cudalint:ignore CL101 <reason>` (see the README).",
        "",
        "| ID | name | level | finds |",
        "|---|---|---|---|",
    ]
    lines += [f"| [{r.id}](#{anchor(r)}) | {r.name} | {r.level.value} | {_cell(r.summary)} |" for r in rules]
    for rule in rules:
        tags = ", ".join(f"`{tag}`" for tag in rule.tags) or "none"
        since = rule.since + (" (preview: runs only when selected by its ID or with --preview)" if rule.preview else "")
        lines += [
            "",
            f"## {rule.id} {rule.name}",
            "",
            rule.summary,
            "",
            f"Default level: `{rule.level.value}`. Since: {since}. Tags: {tags}.",
            "",
            _demote_headings(rule.doc),
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    from cudalint.checks import all_rules

    sys.stdout.write(rules_markdown(all_rules()))


if __name__ == "__main__":
    main()

"""The rule docs' examples are fixtures (as pylint checks its message docs).

The first Go block of a rule's *Example* section must make cudalint report
that rule, and the first Go block of *Use instead* must not. Any other
finding in a block must be claimed by a comment naming its rule on its line
(`check(C.cudaMalloc(&p, n)) // CL101 too`), so an example never shows more
than it says. A block that is a statement list is run as a function body; one
that declares functions or types is run as it is.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cudalint import check
from cudalint.checks import CHECKS
from cudalint.catalog import Rule

_PREAMBLE = """package example

/*
#include <stdlib.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
*/
import "C"

import (
	"errors"
	"reflect"
	"runtime"
	"unsafe"
)

"""
_BLOCK = re.compile(r"```go\n(.*?)```", re.DOTALL)
_TOP_LEVEL = re.compile(r"^(func|type|var|const) ", re.MULTILINE)


def _first_go_block(rule: Rule, section: str) -> str | None:
    match = _BLOCK.search(rule.section(section))
    return match.group(1) if match else None


def _as_file(block: str) -> tuple[str, int]:
    """The Go file the block stands for, and the line of the file where the
    block's first line lands."""
    if _TOP_LEVEL.search(block) and not block.lstrip().startswith(("var ", "const ")):
        return _PREAMBLE + block, _PREAMBLE.count("\n") + 1
    body = "".join("\t" + line if line.strip() else line for line in block.splitlines(keepends=True))
    head = _PREAMBLE + "func example(n C.size_t, sizes []int, host []byte) error {\n"
    return head + body + "\treturn nil\n}\n", head.count("\n") + 1


def _findings(tmp_path: Path, block: str):
    text, first = _as_file(block)
    (tmp_path / "example.go").write_text(text)
    result = check(["."], base=tmp_path, preview=True)
    assert not [n for n in result.notifications if n.kind.value in ("syntax-error", "internal-error")], (
        text, [n.render() for n in result.notifications],
    )
    lines = text.splitlines()
    return [(f.rule_id, lines[f.span.start.line - 1]) for f in result.findings]


def _unclaimed(findings, rule: Rule):
    return [(rule_id, line) for rule_id, line in findings if rule_id != rule.id and rule_id not in line.partition("//")[2]]


DOCUMENTED = [rule for rule in CHECKS if not rule.retired and _first_go_block(rule, "Example") is not None]


@pytest.mark.parametrize("rule", DOCUMENTED, ids=lambda r: r.id)
def test_example_shows_the_rule(rule: Rule, tmp_path: Path) -> None:
    findings = _findings(tmp_path, _first_go_block(rule, "Example"))
    assert any(rule_id == rule.id for rule_id, _ in findings), f"the example of {rule.id} gives {findings}"
    assert not _unclaimed(findings, rule), f"findings the example does not claim: {_unclaimed(findings, rule)}"


@pytest.mark.parametrize(
    "rule", [r for r in DOCUMENTED if _first_go_block(r, "Use instead") is not None], ids=lambda r: r.id,
)
def test_use_instead_is_clean(rule: Rule, tmp_path: Path) -> None:
    findings = _findings(tmp_path, _first_go_block(rule, "Use instead"))
    assert not [f for f in findings if f[0] == rule.id], f"the fix of {rule.id} still gives {findings}"
    assert not _unclaimed(findings, rule), f"findings the fix does not claim: {_unclaimed(findings, rule)}"


def test_every_rule_has_an_executable_example() -> None:
    assert {r.id for r in DOCUMENTED} == {r.id for r in CHECKS if not r.retired}

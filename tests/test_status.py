"""The status analysis answered directly: success values, the failure side
of tests and switch cases, and converters, from call classification alone
(it requires nothing but CALLS)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cudalint import syntax
from cudalint.analyses.calls import CALLS
from cudalint.analyses.status import STATUS, Outcome, StatusSemantics, StatusSource, Subject
from cudalint.functions import collect_packages
from cudalint.parse import parse
from cudalint.source import SourceFile
from gosrc import knowledge, package_run, result_of

SOURCE = """
package p

// #include <cuda_runtime_api.h>
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

func check(st C.cudaError_t) error {
	if st != C.cudaSuccess {
		return fmt.Errorf("cuda: %d", int(st))
	}
	return nil
}

func checkSwitch(st C.cudaError_t) error {
	switch st {
	case C.cudaSuccess:
		return nil
	default:
		return errors.New("cuda failed")
	}
}

func alwaysNil(st C.cudaError_t) error {
	_ = st
	return nil
}

func invertedCheck(st C.cudaError_t) error {
	if st == C.cudaSuccess {
		return errors.New("backwards")
	}
	return nil
}

func use(p unsafe.Pointer) error {
	st := C.cudaMalloc(&p, 16)
	if st != C.cudaSuccess {
		return errors.New("alloc")
	}
	if C.cudaFree(p) != 0 {
		return errors.New("free")
	}
	if st == C.cudaErrorMemoryAllocation {
		return errors.New("oom")
	}
	return check(C.cudaDeviceSynchronize())
}
"""


@pytest.fixture(scope="module")
def semantics() -> tuple[StatusSemantics, dict]:
    data = textwrap.dedent(SOURCE).lstrip("\n").encode()
    parsed = [parse(SourceFile(Path("p.go"), "p.go", data))[0]]
    (package,) = collect_packages(parsed, ".", knowledge().package_names)
    status = result_of(package_run(package), STATUS)
    units = {unit.name: unit for unit in package.units}
    return status, units


def _conditions(unit) -> list:
    return [node.child_by_field_name("condition") for node in syntax.walk(unit.node) if node.type == "if_statement"]


def _malloc(status: StatusSemantics, unit) -> StatusSource:
    call = next(node for node in syntax.walk(unit.node) if node.type == "call_expression" and syntax.text(node).startswith("C.cudaMalloc"))
    fact = status.calls.call(call)
    return StatusSource.of(fact.api, fact.written)


def test_the_analysis_requires_call_classification_only() -> None:
    assert STATUS.requires == (CALLS,)


def test_success_values_are_the_family_s(semantics) -> None:
    status, units = semantics
    source = _malloc(status, units["use"])
    first, _, oom = _conditions(units["use"])
    success_value = first.child_by_field_name("right")
    failure_value = oom.child_by_field_name("right")
    assert status.is_success_value(source, success_value)
    assert not status.is_success_value(source, failure_value)
    assert not status.is_success_value(None, success_value)


def test_the_sides_of_a_comparison(semantics) -> None:
    status, units = semantics
    source = _malloc(status, units["use"])
    first, _, oom = _conditions(units["use"])

    def roles(subject):
        return Subject.STATUS if syntax.text(subject) == "st" else None

    assert status.test(source, roles, first, True) is Outcome.FAILURE  # st != C.cudaSuccess, taken
    assert status.test(source, roles, first, False) is Outcome.SUCCESS
    assert status.test(source, roles, oom, True) is Outcome.FAILURE  # one failure value: true is failure
    assert status.test(source, roles, oom, False) is None  # and false says nothing
    assert status.test(source, lambda _: None, first, True) is None  # a test of something else


def test_a_nil_handle_means_nothing_was_acquired(semantics) -> None:
    status, units = semantics
    data = b"package q\n\nfunc f(p *int) {\n\tif p == nil {\n\t\treturn\n\t}\n}\n"
    parsed = [parse(SourceFile(Path("q.go"), "q.go", data))[0]]
    (package,) = collect_packages(parsed, ".", knowledge().package_names)
    condition = _conditions(package.units[0])[0]
    outcome = status.test(None, lambda subject: Subject.HANDLE if syntax.text(subject) == "p" else None, condition, True)
    assert outcome is Outcome.FAILURE


def test_the_failed_test_of_a_status_call(semantics) -> None:
    status, units = semantics
    first, second, oom = _conditions(units["use"])
    assert syntax.text(status.failed_test(units["use"], first).node).startswith("C.cudaMalloc")
    assert status.failed_test(units["use"], second).written == "C.cudaFree"
    assert status.failed_test(units["use"], oom) is None  # `==` one failure value: no failed test


@pytest.mark.parametrize(("name", "converts"), [
    ("check", True), ("checkSwitch", True), ("alwaysNil", False), ("invertedCheck", False),
])
def test_converters(semantics, name: str, converts: bool) -> None:
    status, units = semantics
    source = _malloc(status, units["use"])
    assert status.converts(units[name], 0, source) is converts


def test_a_converted_status_call(semantics) -> None:
    """`check(C.cudaDeviceSynchronize())`: the call of check converts the
    status of the call it is given; the call itself converts nothing."""
    status, units = semantics
    calls = {syntax.text(node): node for node in syntax.walk(units["use"].node) if node.type == "call_expression"}
    sync, converted = calls["C.cudaDeviceSynchronize()"], calls["check(C.cudaDeviceSynchronize())"]
    assert status.converts_status_at(converted, 0, sync)
    assert not status.converts_status_at(sync, 0, sync)
    source = _malloc(status, units["use"])
    assert status.converts(units["check"], 0, source) and not status.converts(units["alwaysNil"], 0, source)

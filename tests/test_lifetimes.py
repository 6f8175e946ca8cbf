"""The resource engine answered directly, as go/analysis' ctrlflow_test.go
asserts facts: hand-outs of wrappers, the effect of a function on its
parameters, and the outcomes of following each acquisition (leaks and where
they leave, double releases, uses after release, overwrites, mismatched
releases), on a small Go package held in a string."""

from __future__ import annotations

import textwrap

import pytest

from cudalint.analyses.lifetimes import LIFETIMES, Effect, Engine, Lost
from cudalint.analyses.uses import USES
from cudalint.framework import PackageRun
from cudalint.functions import Unit
from gosrc import package_of, package_run, result_of, unit_named

SOURCE = textwrap.dedent("""\
    package p

    // #include <cuda_runtime_api.h>
    // #include <stdlib.h>
    import "C"

    import (
    	"errors"
    	"unsafe"
    )

    var kept unsafe.Pointer

    func alloc(n C.size_t) (unsafe.Pointer, error) {
    	var d unsafe.Pointer
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return nil, errors.New("cudaMalloc")
    	}
    	return d, nil
    }

    func name(s string) *C.char {
    	return C.CString(s)
    }

    func leakyAlloc(n C.size_t) (unsafe.Pointer, error) {
    	var d unsafe.Pointer
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return nil, errors.New("cudaMalloc")
    	}
    	if n > 1024 {
    		return nil, errors.New("too big") // leakyAlloc leaks
    	}
    	return d, nil
    }

    func leakyOnSuccess(n C.size_t) (unsafe.Pointer, error) {
    	var d unsafe.Pointer
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return nil, errors.New("cudaMalloc")
    	}
    	if n > 1024 {
    		return nil, nil // leakyOnSuccess leaks
    	}
    	return d, nil
    }

    func release(d unsafe.Pointer) {
    	C.cudaFree(d)
    }

    func keep(d unsafe.Pointer) {
    	kept = d
    }

    func clear(d unsafe.Pointer) {
    	C.cudaMemset(d, 0, 16)
    }

    func sometimes(d unsafe.Pointer, really bool) {
    	if really {
    		C.cudaFree(d)
    	}
    }

    func user(n C.size_t) error {
    	d, err := alloc(n) // user acquires
    	if err != nil {
    		return err // user's failure side
    	}
    	release(d)
    	return nil
    }

    func leaks(n C.size_t) error {
    	var d unsafe.Pointer
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return errors.New("cudaMalloc")
    	}
    	if C.cudaMemset(d, 0, n) != C.cudaSuccess {
    		return errors.New("cudaMemset") // leaks leaks
    	}
    	C.cudaFree(d)
    	return nil // leaks releases
    }

    func twice(n C.size_t) {
    	var d unsafe.Pointer
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return
    	}
    	C.cudaFree(d) // twice first
    	C.cudaFree(d) // twice second
    }

    func late(n C.size_t) {
    	var d unsafe.Pointer
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return
    	}
    	C.cudaFree(d)          // late releases
    	C.cudaMemset(d, 0, n) // late uses
    }

    func overwritten(n C.size_t) {
    	var d unsafe.Pointer
    	C.cudaMalloc(&d, n) // overwritten first
    	C.cudaMalloc(&d, n) // overwritten second
    	C.cudaFree(d)
    }

    func inLoop(n C.size_t) {
    	for i := 0; i < 3; i++ {
    		var d unsafe.Pointer
    		if C.cudaMalloc(&d, n) != C.cudaSuccess {
    			return
    		}
    		if i == 1 {
    			continue // inLoop loses d
    		}
    		C.cudaFree(d)
    	}
    }

    func discarded() {
    	C.CString("lost") // discarded
    }

    func mismatched(n C.size_t) {
    	var d unsafe.Pointer
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return
    	}
    	C.free(d) // mismatched
    }

    func freesParam(d unsafe.Pointer) {
    	C.cudaFree(d) // freesParam first
    	C.cudaFree(d) // freesParam second
    }

    func deferred(n C.size_t) error {
    	var d unsafe.Pointer
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return errors.New("cudaMalloc")
    	}
    	defer C.cudaFree(d)
    	if C.cudaMemset(d, 0, n) != C.cudaSuccess {
    		return errors.New("cudaMemset")
    	}
    	return nil
    }

    func closure(n C.size_t) error {
    	var d unsafe.Pointer
    	cleanup := func() { C.cudaFree(d) }
    	if C.cudaMalloc(&d, n) != C.cudaSuccess {
    		return errors.New("cudaMalloc")
    	}
    	defer cleanup()
    	return nil
    }
""")


def _line(marker: str) -> int:
    """The line of SOURCE whose comment ends with `marker`."""
    (line,) = [i for i, text in enumerate(SOURCE.splitlines(), 1) if text.rstrip().endswith(f"// {marker}")]
    return line


@pytest.fixture(scope="module")
def analysed() -> tuple[Engine, PackageRun]:
    run = package_run(package_of(SOURCE))
    return result_of(run, LIFETIMES), run


def _unit(run: PackageRun, name: str) -> Unit:
    return unit_named(run.package, name)


def _line_of_node(run: PackageRun, unit: Unit, node: int) -> int:
    return run.cfgs.graphs[unit].line(node)


def test_a_wrapper_hands_out_what_it_acquires_and_returns(analysed) -> None:
    engine, run = analysed
    ((origin, index),) = engine.handed_out(_unit(run, "alloc"))
    assert (origin.written, origin.handle, index) == ("C.cudaMalloc", "d", 0)
    ((origin, index),) = engine.handed_out(_unit(run, "name"))
    assert (origin.written, origin.handle, index) == ("C.CString", "", 0)  # the call returned as it is


def test_a_function_that_leaks_only_where_it_fails_still_hands_out_where_it_succeeds(analysed) -> None:
    """Its leak is reported where it fails; where it succeeds its callers
    hold what it returns, as of any wrapper."""
    engine, run = analysed
    assert [(origin.handle, index) for origin, index in engine.handed_out(_unit(run, "leakyAlloc"))] == [("d", 0)]
    (leak,) = engine.lifetimes(_unit(run, "leakyAlloc")).leaks
    assert (leak.how, leak.line, leak.on_failure) == (Lost.RETURN, _line("leakyAlloc leaks"), True)


def test_a_function_that_leaks_where_it_succeeds_hands_nothing_out(analysed) -> None:
    engine, run = analysed
    assert engine.handed_out(_unit(run, "leakyOnSuccess")) == []
    (leak,) = engine.lifetimes(_unit(run, "leakyOnSuccess")).leaks
    assert (leak.how, leak.line, leak.on_failure) == (Lost.RETURN, _line("leakyOnSuccess leaks"), False)


def test_a_wrapper_s_call_is_an_acquisition_held_where_its_error_is_nil(analysed) -> None:
    engine, run = analysed
    user = _unit(run, "user")
    assert user in engine.units_with_acquisitions()
    assert _unit(run, "keep") not in engine.units_with_acquisitions()
    found = engine.lifetimes(user)
    (origin,) = found.origins
    assert (origin.written, origin.handle, origin.line) == ("alloc", "d", _line("user acquires"))
    assert origin.innermost.written == "C.cudaMalloc" and origin.innermost.unit is _unit(run, "alloc")
    assert found.leaks == []  # released through release(d); its failure side holds nothing


@pytest.mark.parametrize("function, effect", [
    ("release", Effect.RELEASES),
    ("keep", Effect.RETAINS),
    ("sometimes", Effect.RETAINS),
    ("clear", Effect.BORROWS),
])
def test_the_effect_of_a_function_on_its_parameter(analysed, function: str, effect: Effect) -> None:
    engine, run = analysed
    assert engine.effect_of_argument(_unit(run, function), 0) is effect


def test_a_summary_tells_some_paths_from_every_path(analysed) -> None:
    engine, run = analysed
    sometimes = _unit(run, "sometimes")
    summary = engine.summary(sometimes, sometimes.params[0])
    assert summary.releases_on_some_path and not summary.releases_on_every_path and not summary.hands_over
    release = _unit(run, "release")
    assert engine.summary(release, release.params[0]).releases_on_every_path
    assert engine.effect_of_argument(release, 5) is Effect.RETAINS  # no such parameter: kept


def test_a_leak_leaves_at_the_return_that_holds_it(analysed) -> None:
    engine, run = analysed
    unit = _unit(run, "leaks")
    (leak,) = engine.lifetimes(unit).leaks
    assert (leak.how, leak.line, leak.origin.handle) == (Lost.RETURN, _line("leaks leaks"), "d")
    assert leak.path[0] == leak.origin.node and _line_of_node(run, unit, leak.node) == _line("leaks leaks")
    assert leak.other_defer is None and not leak.released_through_held


def test_the_success_side_s_returns(analysed) -> None:
    engine, run = analysed
    unit = _unit(run, "leaks")
    (origin,) = engine.lifetimes(unit).origins
    lines = [_line_of_node(run, unit, n) for n in engine.returns_on_success(origin)]
    assert lines == [_line("leaks leaks"), _line("leaks releases")]


def test_a_second_release(analysed) -> None:
    engine, run = analysed
    unit = _unit(run, "twice")
    (double,) = engine.lifetimes(unit).double_releases
    assert _line_of_node(run, unit, double.node) == _line("twice second")
    assert _line_of_node(run, unit, double.first) == _line("twice first")
    assert (double.handle, double.by_defer) == ("d", False)


def test_a_parameter_released_twice(analysed) -> None:
    engine, run = analysed
    unit = _unit(run, "freesParam")
    (double,) = engine.lifetimes(unit).double_releases
    assert double.origin is None and double.handle == "d"
    assert _line_of_node(run, unit, double.node) == _line("freesParam second")


def test_a_use_after_release(analysed) -> None:
    engine, run = analysed
    unit = _unit(run, "late")
    (late,) = engine.lifetimes(unit).uses_after_release
    assert _line_of_node(run, unit, late.node) == _line("late uses")
    assert _line_of_node(run, unit, late.released) == _line("late releases")
    assert late.use.symbol.name == "d"
    assert engine.lifetimes(unit).leaks == []


def test_an_overwrite_while_held(analysed) -> None:
    engine, run = analysed
    unit = _unit(run, "overwritten")
    found = engine.lifetimes(unit)
    (overwrite,) = found.overwrites
    assert overwrite.origin.line == _line("overwritten first")
    assert _line_of_node(run, unit, overwrite.node) == _line("overwritten second")
    assert found.leaks == []  # one defect, one finding


def test_a_variable_of_a_loop_body_is_lost_at_the_end_of_its_iteration(analysed) -> None:
    engine, run = analysed
    (leak,) = engine.lifetimes(_unit(run, "inLoop")).leaks
    assert (leak.how, leak.line, leak.origin.handle) == (Lost.SCOPE, _line("inLoop loses d"), "d")


def test_a_result_never_stored_is_lost_at_once(analysed) -> None:
    engine, run = analysed
    (leak,) = engine.lifetimes(_unit(run, "discarded")).leaks
    assert (leak.how, leak.line, leak.detail) == (Lost.DISCARDED, _line("discarded"), "its result is discarded")


def test_a_release_of_another_kind(analysed) -> None:
    engine, run = analysed
    unit = _unit(run, "mismatched")
    (mismatch,) = engine.lifetimes(unit).mismatches
    assert mismatch.release_call == "C.free" and mismatch.origin.written == "C.cudaMalloc"
    assert mismatch.release_resource.name != mismatch.origin.resource.name
    assert _line_of_node(run, unit, mismatch.node) == _line("mismatched")


@pytest.mark.parametrize("function", ["deferred", "closure"])
def test_a_release_registered_for_exit_covers_every_return(analysed, function: str) -> None:
    engine, run = analysed
    found = engine.lifetimes(_unit(run, function))
    assert len(found.origins) == 1
    # Released at exit, not where registered: deferred's cudaMemset after
    # the defer is no use after release.
    assert (found.leaks, found.double_releases, found.uses_after_release) == ([], [], [])


def test_a_closure_s_summary_of_what_it_captures(analysed) -> None:
    engine, run = analysed
    literal = unit_named(run.package, "closure.func1")
    (captured,) = result_of(run, USES).captures(literal)
    assert engine.effect(literal, captured) is Effect.RELEASES


def test_a_function_over_the_path_budget_is_given_up() -> None:
    labels = 120
    body = "".join(
        f"L{i}:\n\tif n == {i} {{\n\t\tC.cudaFree(d)\n\t\tgoto L{(i * 7 + 3) % labels}\n\t}}\n" for i in range(labels)
    )
    source = (
        'package p\n\nimport "C"\n\nimport "unsafe"\n\nfunc f(n int) {\n\tvar d unsafe.Pointer\n'
        "\tif C.cudaMalloc(&d, 16) != C.cudaSuccess {\n\t\treturn\n\t}\n" + body + "\tC.cudaFree(d)\n}\n"
    )
    run = package_run(package_of(source))
    engine = result_of(run, LIFETIMES)
    unit = _unit(run, "f")
    found = engine.lifetimes(unit)
    assert (found.origins, found.double_releases) == ([], [])
    assert run.cfgs.failures[unit] == "has too many paths to follow (over 100,000 path states)"
    assert not run.cfgs.analysable(unit)


def test_many_flags_are_not_followed_and_the_leak_is_still_found() -> None:
    """Boolean flags are followed like nil-tested errors (`owned = true` ...
    `if owned { free }`), each one doubling the paths at most: a function
    testing fourteen options would exceed the path budget and go
    unanalysed, so past a few flags none is followed."""
    flags = 14
    source = (
        'package p\n\nimport "C"\n\nimport "unsafe"\n\nfunc f(xs []int) int {\n\tp := C.malloc(8)\n\ttotal := 0\n'
        + "".join(f"\tf{i} := false\n" for i in range(flags))
        + "".join(f"\tif len(xs) > {i} {{\n\t\tf{i} = true\n\t}}\n" for i in range(flags))
        + "".join(f"\tif f{i} {{\n\t\ttotal += {i}\n\t}}\n" for i in range(flags))
        + "\tif total > 100 {\n\t\treturn total\n\t}\n\tC.free(unsafe.Pointer(p))\n\treturn total\n}\n"
    )
    run = package_run(package_of(source))
    unit = _unit(run, "f")
    found = result_of(run, LIFETIMES).lifetimes(unit)
    assert unit not in run.cfgs.failures
    assert [leak.origin.handle for leak in found.leaks] == ["p"]

"""Counted (handle-less) resources answered by the engine directly
(DESIGN.md, *Handle-less (counted) resources*): what an initialiser hands on,
which returns leak a count, and releases registered before the acquisition
succeeded, on a small cgo package held in a string."""

from __future__ import annotations

import textwrap

import pytest

from cudalint.analyses.lifetimes import LIFETIMES, Engine
from cudalint.framework import PackageRun
from gosrc import package_of, package_run, result_of, unit_named

SOURCE = textwrap.dedent("""\
    package p

    // #include <cuda.h>
    import "C"

    import "errors"

    var errCUDA = errors.New("cuda")

    func retain(dev C.CUdevice) error {
    	var ctx C.CUcontext
    	if C.cuDevicePrimaryCtxRetain(&ctx, dev) != C.CUDA_SUCCESS {
    		return errCUDA
    	}
    	return nil
    }

    func failing(dev C.CUdevice) error {
    	var ctx C.CUcontext
    	if C.cuDevicePrimaryCtxRetain(&ctx, dev) != C.CUDA_SUCCESS {
    		return errCUDA
    	}
    	if C.cuCtxSetCurrent(ctx) != C.CUDA_SUCCESS {
    		return errCUDA // failing leaks
    	}
    	return nil
    }

    func caller(dev C.CUdevice) error {
    	if err := retain(dev); err != nil {
    		return err
    	}
    	if C.cuCtxSynchronize() != C.CUDA_SUCCESS {
    		return errors.New("sync") // caller leaks
    	}
    	C.cuDevicePrimaryCtxRelease(dev)
    	return nil
    }

    func early(dev C.CUdevice) error {
    	defer C.cuDevicePrimaryCtxRelease(dev)
    	var ctx C.CUcontext
    	if C.cuDevicePrimaryCtxRetain(&ctx, dev) != C.CUDA_SUCCESS {
    		return errCUDA // early runs the defer
    	}
    	return nil
    }

    func twice(dev C.CUdevice) {
    	var ctx C.CUcontext
    	if C.cuDevicePrimaryCtxRetain(&ctx, dev) != C.CUDA_SUCCESS {
    		return
    	}
    	C.cuDevicePrimaryCtxRelease(dev)
    	C.cuDevicePrimaryCtxRelease(dev) // twice again
    }
""")


def _line(marker: str) -> int:
    return next(i for i, line in enumerate(SOURCE.splitlines(), 1) if marker in line)


@pytest.fixture(scope="module")
def analysed() -> tuple[Engine, PackageRun]:
    run = package_run(package_of(SOURCE))
    return result_of(run, LIFETIMES), run


def test_an_initialiser_hands_its_count_on_where_it_succeeds(analysed) -> None:
    engine, run = analysed
    retain = unit_named(run.package, "retain")
    assert engine.lifetimes(retain).leaks == []
    ((origin, index),) = engine.handed_out(retain)
    assert (origin.written, index, origin.role.handle) == ("C.cuDevicePrimaryCtxRetain", -1, "none")


def test_a_failing_return_after_the_acquisition_leaks_the_count(analysed) -> None:
    engine, run = analysed
    failing = unit_named(run.package, "failing")
    (leak,) = engine.lifetimes(failing).leaks
    assert leak.failing and leak.line == _line("failing leaks")
    assert engine.handed_out(failing) != []  # and it hands the count on where it succeeds


def test_a_caller_of_an_initialiser_acquires_the_count(analysed) -> None:
    engine, run = analysed
    caller = unit_named(run.package, "caller")
    (leak,) = engine.lifetimes(caller).leaks
    assert (leak.origin.written, leak.line, leak.failing) == ("retain", _line("caller leaks"), True)


def test_a_release_registered_before_the_acquisition_succeeded(analysed) -> None:
    engine, run = analysed
    early = unit_named(run.package, "early")
    (found,) = engine.lifetimes(early).early_releases
    graph = run.cfgs.graphs[early]
    assert graph.line(found.defer) == _line("defer C.cuDevicePrimaryCtxRelease") and graph.line(found.node) == _line("early runs")
    assert engine.lifetimes(early).leaks == []


def test_two_releases_of_one_count(analysed) -> None:
    engine, run = analysed
    twice = unit_named(run.package, "twice")
    (double,) = engine.lifetimes(twice).double_releases
    assert run.cfgs.graphs[twice].line(double.node) == _line("twice again")

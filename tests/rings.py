"""Go packages of 5,000 functions of one recursive shape, for the recursion
tests (tests/test_recursion.py) and their figures (benchmarks/hostile.py).

Each generator gives function i of a ring of n (each calls the next) or of
a chain; SHAPES pairs it with the findings a package of n of them has.
"""

from __future__ import annotations

HEAD = '''package p

// #include <cuda_runtime_api.h>
import "C"

import (
\t"errors"
\t"runtime"
\t"unsafe"
)

var _ = errors.New
var _ = unsafe.Pointer(nil)
var _ = runtime.GOOS

'''


def _lock(i: int, n: int) -> str:
    """Locks around the call of the next: every caller holds the lock, so
    no CL401 anywhere in the ring."""
    return (
        f"func f{i}(k int) {{\n\tif k > 0 {{\n\t\truntime.LockOSThread()\n\t\tf{(i + 1) % n}(k - 1)\n"
        "\t\truntime.UnlockOSThread()\n\t}\n\tC.cudaSetDevice(0)\n}\n\n"
    )


def _unlock_in_deferred_closure(i: int, n: int) -> str:
    """A deferred closure calling the next function, which is no unlock
    wrapper: the lock is undone on one branch only (CL402 in each)."""
    return (
        f"func f{i}(k int) {{\n\truntime.LockOSThread()\n\tdefer func() {{\n\t\tf{(i + 1) % n}(k - 1)\n\t}}()\n"
        "\tif k > 0 {\n\t\truntime.UnlockOSThread()\n\t}\n}\n\n"
    )


def _unlock_wrappers(i: int, n: int) -> str:
    """Unlocks that recurse through each other before unlocking, undone by
    deferred closures: a recursive component whose effect the bounded
    fixpoint settles (conservatively, as no wrapper), with no finding."""
    return (
        f"func u{i}(k int) {{\n\tif k > 0 {{\n\t\tu{(i + 1) % n}(k - 1)\n\t\treturn\n\t}}\n\truntime.UnlockOSThread()\n}}\n\n"
        f"func L{i}() {{\n\truntime.LockOSThread()\n\tdefer func() {{\n\t\tu{i}(0)\n\t}}()\n\tC.cudaSetDevice(0)\n}}\n\n"
    )


def _acquire_release(i: int, n: int) -> str:
    """Allocators handing the pointer up a ring, releasers passing it down."""
    nxt = (i + 1) % n
    return (
        f"func f{i}(k int) (unsafe.Pointer, error) {{\n\tif k == 0 {{\n\t\tvar d unsafe.Pointer\n"
        "\t\tif C.cudaMalloc(&d, 16) != C.cudaSuccess {\n\t\t\treturn nil, errors.New(\"alloc\")\n\t\t}\n"
        f"\t\treturn d, nil\n\t}}\n\treturn f{nxt}(k - 1)\n}}\n\n"
        f"func g{i}(d unsafe.Pointer, k int) {{\n\tif k == 0 {{\n\t\t_ = C.cudaFree(d)\n\t\treturn\n\t}}\n\tg{nxt}(d, k-1)\n}}\n\n"
    )


def _status_wrappers(i: int, n: int) -> str:
    return (
        f"func f{i}(k int) error {{\n\tif k == 0 {{\n\t\tif st := C.cudaDeviceSynchronize(); st != C.cudaSuccess {{\n"
        f"\t\t\treturn errors.New(\"sync\")\n\t\t}}\n\t\treturn nil\n\t}}\n\treturn f{(i + 1) % n}(k - 1)\n}}\n\n"
    )


def _finalizers(i: int, n: int) -> str:
    nxt = (i + 1) % n
    return (
        f"type T{i} struct {{\n\tp unsafe.Pointer\n\tn *T{nxt}\n}}\n\n"
        f"func (t *T{i}) Free() {{\n\tif t.n != nil {{\n\t\tt.n.Free()\n\t}}\n\t_ = C.cudaFree(t.p)\n}}\n\n"
        f"func New{i}() *T{i} {{\n\tt := &T{i}{{}}\n\tif C.cudaMalloc(&t.p, 16) != C.cudaSuccess {{\n\t\treturn nil\n\t}}\n"
        f"\tt.n = New{nxt}()\n\truntime.SetFinalizer(t, (*T{i}).Free)\n\treturn t\n}}\n\n"
    )


def _func_values(i: int, n: int) -> str:
    """Recursion through package variables holding functions and through
    closures called in place."""
    return (
        f"var v{i} func(int)\n\nfunc f{i}(k int) {{\n\truntime.LockOSThread()\n\tg := func() {{ v{(i + 1) % n}(k - 1) }}\n"
        f"\tg()\n\truntime.UnlockOSThread()\n}}\n\nfunc init() {{ v{i} = f{i} }}\n\n"
    )


def _methods(i: int, n: int) -> str:
    """Methods of one type calling each other through the receiver."""
    return (
        f"func (s *S) M{i}(d unsafe.Pointer, k int) {{\n\tif k == 0 {{\n\t\t_ = C.cudaFree(d)\n\t\treturn\n\t}}\n"
        f"\ts.M{(i + 1) % n}(d, k-1)\n}}\n\n"
    )


def _chain(i: int, n: int) -> str:
    """A 5,000-deep chain down to a thread-bound call, entered locked."""
    if i == n - 1:
        return f"func f{i}() {{\n\tif C.cudaSetDevice(0) != C.cudaSuccess {{\n\t\treturn\n\t}}\n}}\n\n"
    return f"func f{i}() {{\n\tf{i + 1}()\n}}\n\n"


def _unlocked_chain(i: int, n: int) -> str:
    """The same chain entered from an unexported function that never locks:
    one CL401, at the outermost call."""
    return _chain(i, n)


def _embedded_types(i: int, n: int) -> str:
    """Each type embeds the next; the last one's method is promoted through
    all of them (found level by level, not by recursion)."""
    if i == n - 1:
        return f"type E{i} struct {{\n\tp unsafe.Pointer\n}}\n\nfunc (e *E{i}) Sync() {{\n\tC.cudaDeviceSynchronize()\n}}\n\n"
    return f"type E{i} struct {{\n\tE{i + 1}\n}}\n\n"


def _same_name_methods(i: int, n: int) -> str:
    """5,000 types, each with a Run method that locks around a thread-bound
    call, each called once: finding the calls of one method among the
    5,000 calls of that name was quadratic (the review of issue 20)."""
    return (
        f"type R{i} struct{{}}\n\nfunc (r *R{i}) Run() {{\n\truntime.LockOSThread()\n\tdefer runtime.UnlockOSThread()\n"
        f"\tC.cudaSetDevice(0)\n}}\n\nfunc run{i}() {{\n\tr := &R{i}{{}}\n\tr.Run()\n}}\n\n"
    )


TRAILERS = {
    "embedded-types": "func use(e *E0) {\n\te.Sync()\n}\n",
    "chain": "func Run() {\n\truntime.LockOSThread()\n\tdefer runtime.UnlockOSThread()\n\tf0()\n}\n",
    "unlocked-chain": "func start() {\n\tf0()\n}\n\nfunc Run() {\n\tgo start()\n}\n",
    "methods": "type S struct{}\n",
}

SHAPES = {
    # shape: (generator, findings expected for n functions, as {rule: count})
    "lock": (_lock, lambda n: {"CL301": n}),
    "unlock-in-deferred-closure": (_unlock_in_deferred_closure, lambda n: {"CL402": n}),
    "unlock-wrappers": (_unlock_wrappers, lambda n: {"CL301": n}),
    "acquire-release": (_acquire_release, lambda n: {"CL502": n}),
    "status-wrappers": (_status_wrappers, lambda n: {}),
    "finalizers": (_finalizers, lambda n: {}),
    "func-values": (_func_values, lambda n: {}),
    "methods": (_methods, lambda n: {}),
    "chain": (_chain, lambda n: {}),
    "embedded-types": (_embedded_types, lambda n: {"CL301": 1}),
    "same-name-methods": (_same_name_methods, lambda n: {"CL301": n}),
    "unlocked-chain": (_unlocked_chain, lambda n: {"CL401": 1}),
}


def ring_source(shape: str, n: int) -> str:
    """The Go source of a package of n functions of this shape."""
    generate, _ = SHAPES[shape]
    return HEAD + "".join(generate(i, n) for i in range(n)) + TRAILERS.get(shape, "")

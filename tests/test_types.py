"""The type oracle (cudalint.gotypes): the Go types cudalint reads off the
syntax of a package, asked directly on small sources."""

from __future__ import annotations

from cudalint import syntax
from cudalint.analyses.calls import index_calls
from cudalint.gotypes import (
    TypeOracle, declared_type, element_name, first_result, imported_type, named_type, result_types,
    short_type,
)
from gosrc import knowledge, package_of, unit_named

SOURCE = """
package p

import "cutil"

type Inner struct{ n int }

func (i *Inner) Size() int { return i.n }

type Buffer struct {
	Inner
	mem   *cutil.Mem
	next  *Buffer
	items []*Buffer
	byKey map[string]*Inner
}

func (b *Buffer) Next() *Buffer { return b.next }

func (b *Buffer) Mem() (m *cutil.Mem, err error) { return b.mem, nil }

type Box[T any] struct{ value T }

func NewBuffer() *Buffer { return &Buffer{} }

func NewPair() (*Buffer, error) { return nil, nil }

func Generic[T any](v T) T {
	var local T
	return local
}

func use(reqs <-chan *Buffer, list []Buffer, table map[string]*Inner, arr *[4]Inner) {
	a := &Buffer{}
	b := new(Inner)
	c := NewBuffer()
	d, err := NewPair()
	var e Box[int]
	f := Box[int]{}
	g := a.next
	h := a.Inner
	i := *a
	var j cutil.Mem
	k := (&Buffer{})
	for r := range reqs {
		_ = r
	}
	for idx, l := range list {
		_, _ = idx, l
	}
	for key, m := range table {
		_, _ = key, m
	}
	for _, n := range arr {
		_ = n
	}
	for _, o := range a.items {
		_ = o
	}
	for _, p := range a.byKey {
		_ = p
	}
	q := list[0]
	y := a.items[1]
	s := make([]int, 4)
	t := []C.float{1, 2}
	u := [4]int{}
	var v []cutil.Size
	w := make(map[string]int)
	x := NewBuffer
	_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _ = a, b, c, d, err, e, f, g, h, i, j, k, s, t, u, v, w, x, q, y, Generic[int]
}
"""


def _setup():
    package = package_of(SOURCE)
    calls = index_calls(package, knowledge())
    return package, calls.types


def _variable(package, name: str):
    """The identifier node declaring `name` in `use`."""
    for node in syntax.walk(unit_named(package, "use").node):
        if node.type == "identifier" and syntax.text(node) == name:
            symbol = package.resolution.symbol(node)
            if symbol is not None and symbol.node is not None:
                return symbol.node
    raise AssertionError(name)


def _symbol(package, name: str):
    return package.resolution.symbol(_variable(package, name))


def test_the_package_type_of_an_expression() -> None:
    package, oracle = _setup()
    assert isinstance(oracle, TypeOracle)
    answers = {name: oracle.type_of(_variable(package, name)) for name in "abcdefghijkrlmn"}
    assert answers == {
        "a": "Buffer",      # &Buffer{}
        "b": "Inner",       # new(Inner)
        "c": "Buffer",      # a constructor's result
        "d": "Buffer",      # the first of a constructor's results
        "e": "Box",         # a generic type, declared
        "f": "Box",         # a generic type's composite literal
        "g": "Buffer",      # a struct field
        "h": "Inner",       # an embedded field
        "i": "Buffer",      # *a
        "j": None,          # another package's type
        "k": "Buffer",      # parenthesised
        "r": "Buffer",      # ranged over a channel
        "l": "Buffer",      # ranged over a slice (the value)
        "m": "Inner",       # ranged over a map (the value)
        "n": "Inner",       # ranged over a pointer to an array
    }
    assert oracle.type_of(_variable(package, "idx")) is None  # the index of a slice
    assert oracle.type_of(_variable(package, "key")) is None  # the key of a map
    local = next(n for n in syntax.walk(unit_named(package, "Generic").node) if syntax.text(n) == "local")
    assert oracle.type_of(local) == "T"  # a type parameter, by its name, as the syntax says it


def test_struct_fields_and_embedded_types() -> None:
    _, oracle = _setup()
    structs = oracle.structs()
    assert list(structs) == ["Inner", "Buffer", "Box"]
    fields, embedded = structs["Buffer"]
    assert embedded == ["Inner"]
    assert sorted(fields) == ["Inner", "byKey", "items", "mem", "next"]
    assert named_type(fields["next"]) == "Buffer"
    assert named_type(fields["mem"]) is None  # another package's


def test_access_paths_use_short_types() -> None:
    _, oracle = _setup()
    paths = oracle.paths()
    assert paths.fields["Buffer"] == {
        "Inner": "Inner", "mem": "cutil.Mem", "next": "Buffer", "items": "[]Buffer", "byKey": "[]Inner",
    }
    assert paths.fields["Box"] == {"value": "T"}  # a type parameter, by its name
    assert paths.results[("Buffer", "Next")] == "Buffer"
    assert paths.results[("Buffer", "Mem")] == "cutil.Mem"  # the first of named results
    assert paths.results[("Inner", "Size")] == "int"
    assert paths.along("Buffer", ("items", "[]", "next", "Mem()")) == ["Buffer", "[]Buffer", "Buffer", "Buffer", "cutil.Mem"]
    assert paths.along("Buffer", ("byKey", "[]", "n")) == ["Buffer", "[]Inner", "Inner", "int"]
    assert paths.along("Buffer", ("mem", "ptr", "[]")) == ["Buffer", "cutil.Mem", None, None]


def test_short_and_named_types_of_type_nodes() -> None:
    package, _ = _setup()
    table = _symbol(package, "table").type_node
    reqs = _symbol(package, "reqs").type_node
    e = _symbol(package, "e").type_node
    assert short_type(table) == "[]Inner"  # a map reads as its values
    assert named_type(table) is None
    assert short_type(reqs) is None  # a channel is no access path
    assert short_type(e) == named_type(e) == "Box"
    assert short_type(None) is None and named_type(None) is None


def test_range_elements() -> None:
    """Over a variable, and over a struct field (`range a.items`)."""
    package, oracle = _setup()
    texts = {name: syntax.text(found) if (found := oracle.ranged_type(_symbol(package, name))) is not None else None
             for name in ("r", "idx", "l", "key", "m", "n", "o", "p", "a")}
    assert texts == {
        "r": "*Buffer", "idx": None, "l": "Buffer", "key": None, "m": "*Inner", "n": "Inner",
        "o": "*Buffer", "p": "*Inner", "a": None,
    }


def test_elements_of_ranged_fields_and_indexes_are_typed() -> None:
    package, oracle = _setup()
    assert oracle.type_of(_variable(package, "o")) == "Buffer"
    assert oracle.type_of(_variable(package, "q")) == "Buffer"  # list[0]
    assert oracle.type_of(_variable(package, "y")) == "Buffer"  # a.items[1]


def test_declared_types_of_locals() -> None:
    package, _ = _setup()
    resolution = package.resolution

    def declared(name: str) -> str | None:
        found = declared_type(resolution, _variable(package, name))
        return syntax.text(found) if found is not None else None

    assert declared("e") == "Box[int]"
    assert declared("f") == "Box[int]"  # the composite literal's
    assert declared("s") == "[]int"  # make's
    assert declared("w") == "map[string]int"
    assert declared("c") == "*Buffer"  # the constructor's result
    assert declared("d") is None  # a second-position assignment of a call
    assert declared("a") is None  # &T{} is no composite literal itself
    assert declared("x") is None  # a function value
    assert declared("reqs") == "<-chan *Buffer"


def test_element_names_of_slices_and_arrays() -> None:
    package, _ = _setup()
    names = {name: element_name(_symbol(package, name)) for name in ("s", "t", "u", "v", "list", "w", "table", "reqs")}
    assert names == {
        "s": "int", "t": "C.float", "u": "int", "v": "cutil.Size", "list": "Buffer",
        "w": None, "table": None, "reqs": None,
    }


def test_first_results() -> None:
    package, _ = _setup()
    found = {}
    for unit in package.units:
        result = first_result(unit.node.child_by_field_name("result"))
        found[unit.name] = syntax.text(result) if result is not None else None
    assert found["NewBuffer"] == "*Buffer"
    assert found["NewPair"] == "*Buffer"
    assert found["(*Buffer).Mem"] == "*cutil.Mem"
    assert found["Generic"] == "T"
    assert found["use"] is None


def test_result_types_name_the_package_types_of_each_result() -> None:
    package, _ = _setup()
    assert result_types(unit_named(package, "NewBuffer")) == ("Buffer",)
    assert result_types(unit_named(package, "NewPair")) == ("Buffer", "error")  # a predeclared name reads as written
    assert result_types(unit_named(package, "(*Buffer).Mem")) == ("", "error")  # another package's is ""
    assert result_types(unit_named(package, "Generic")) == ("T",)
    assert result_types(unit_named(package, "use")) == ()


def test_imported_types_of_variables() -> None:
    package, _ = _setup()
    assert imported_type(package.resolution, _symbol(package, "j")) == ("cutil", "Mem")
    assert imported_type(package.resolution, _symbol(package, "e")) is None  # this package's
    assert imported_type(package.resolution, _symbol(package, "a")) is None  # not declared with a type


def test_types_of_other_packages_a_struct_embeds() -> None:
    """Their methods are promoted: shallowest first, through the package's
    own embedded structs, pointers stripped; named fields are not embedded."""
    package = package_of("""package p

import (
	"example.com/cutil"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

type gpu struct {
	nvml.Device
	*cutil.Mem
	name cutil.Size
}

type slot struct {
	*gpu
	cutil.Stream
}

type plain struct{ n int }
""")
    oracle = index_calls(package, knowledge()).types
    nvml = "github.com/NVIDIA/go-nvml/pkg/nvml"
    assert oracle.embedded_imported("gpu") == [(nvml, "Device"), ("example.com/cutil", "Mem")]
    assert oracle.embedded_imported("slot") == [("example.com/cutil", "Stream"), (nvml, "Device"), ("example.com/cutil", "Mem")]
    assert oracle.embedded_imported("plain") == [] and oracle.embedded_imported("missing") == []

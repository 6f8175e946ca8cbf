"""The C side of cgo: what the C functions a package calls return.

cudalint knows the CUDA API from the knowledge files; a project's own C
helpers (`static inline cudaError_t dev_alloc(void **p, size_t n) { return
cudaMalloc(p, n); }` in the cgo preamble, a `gpu.h`/`gpu.c` beside the Go
files) are invisible to them, and every leak and dropped status behind such
a helper with them. This stage reads, with tree-sitter-c, the C a package
sees of its own: the preamble of each cgo file, the headers it includes by
relative path (resolved against the package directory, the `-I${SRCDIR}/...`
and the relative `-I./include` of `#cgo CFLAGS`), and the package directory's `.c` and `.h` files. It
extracts each function's return type, resolved through the typedefs it saw,
and, for a helper whose body returns what a single call returned
(`return cudaMalloc(p, n);`), that call and how its arguments map to the
helper's parameters, and the function pointers a `dlopen` loader fills
with `dlsym`. The system headers the package's C includes with `<...>` are
read where they are found (the absolute `-I` of `#cgo CFLAGS`, the
configuration's `c-include`, the usual CUDA locations), once per process
and content. Nothing is compiled, preprocessed or executed: attribute
macros of the CUDA headers are blanked, a function-like macro that pastes
a name (`#define NVML_DL(x) x##_dl`) names what it declares (`NVML_DL(nvmlInit)`
is nvmlInit_dl, and declared without a body it is that API's variant), other
macros are not expanded (a helper defined through one is not seen), and
`#if` branches are all read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from tree_sitter import Language, Node, Parser

from cudalint import syntax
from cudalint.clocals import assigned_call, declared_text, local_copy_of
from cudalint.cresult import declared_locals, into_result, null_test, result_fields, unwrapped
from cudalint.cxx import cxx_definitions, cxx_lifetime, makes_objects, readable_definition
from cudalint.parse import ParsedFile

# A header or C file larger than this is not read (generated tables, amalgamations).
MAX_C_BYTES = 2 * 1024 * 1024
_INCLUDE = re.compile(rb'^\s*#\s*include\s+"([^"]+)"', re.M)
_SYSTEM_INCLUDE = re.compile(rb'^\s*#\s*include\s+[<"]([^>"]+)[>"]', re.M)
# Attribute and calling-convention macros of the CUDA headers, blanked before
# parsing (no preprocessor runs): `extern __host__ cudaError_t CUDARTAPI
# cudaMalloc(void **devPtr, size_t size);` then parses as a declaration.
_ATTRIBUTES = re.compile(
    rb"\b(?:__host__|__device__|__device_builtin__|__cudart_builtin__|__forceinline__|CUDARTAPI|CUDAAPI|CUDART_CB|CUDA_CB|CUPTIAPI|CUDNNWINAPI|"
    rb"CUBLASWINAPI|CUFFTAPI|CURANDAPI|NCCL_API|DECLDIR|CUDART_DEPRECATED|__CUDA_DEPRECATED)\b"
    rb"|\b__dv\([^)]*\)|\b__attribute__\(\([^)]*\)\)"
)
# Where the CUDA headers usually are, read when present.
CUDA_INCLUDE_DIRS = (Path("/usr/local/cuda/include"), Path("/opt/cuda/include"))
_CFLAGS_INCLUDE = re.compile(rb"^\s*#cgo\b[^:\n]*CFLAGS:(.*)$", re.M)
# A system header and those it includes, parsed once per process and content.
_HEADER_CACHE: dict[tuple[Path, int, int], CView] = {}


@dataclass(frozen=True)
class CFunction:
    """A C function the package defines or declares."""

    name: str
    returns: str  # the return type as written, qualifiers dropped: "cudaError_t", "void", "int"
    pointer: bool  # returns a pointer
    params: tuple[str, ...]  # parameter names ("" where unnamed)
    # For a helper whose every return returns one call's result: that call's
    # name and, per argument of it, the index of the helper parameter passed
    # there as is or by address-of-dereference (-1: something else).
    wraps: str = ""
    wrapped_args: tuple[int, ...] = ()
    # It may return a success constant without making the call (`if
    # (inited) return NVML_SUCCESS;`): an init-once guard, so its success
    # says nothing of an acquisition.
    succeeds_without_call: bool = False
    # Parameters whose value (or a field of it) the body stores where it
    # outlives the call: through another parameter or into a global.
    keeps: tuple[int, ...] = ()
    # (callee, argument index, parameter index) for each parameter the body
    # passes on as is (casts aside): `cudaMemcpyAsync(dst, src, ...)` in a
    # helper of several calls, for what those calls do with their arguments.
    passes: tuple[tuple[str, int, int], ...] = ()
    unfinished: tuple[tuple[str, int, int], ...] = ()  # those no synchronisation follows
    # For a function that returns a struct its own helper builds from an API
    # call's status (`return kr_status(cudaFree(ptr), NULL);`, or the status
    # held in a local first): that call, and its arguments' parameters as
    # for `wraps`. Its releases are the function's; what it acquires lands
    # in the struct, which is not followed.
    carried: str = ""
    carried_args: tuple[int, ...] = ()
    # The parameters' base types (`GpuMat` of `GpuMat m`), to tell which
    # of several releasing helpers takes what another made.
    param_types: tuple[str, ...] = ()
    # The parameter the body `free`s, as is or through a local cast of it
    # (`struct container *c = (struct container *)p; ... free(c);`); -1: none.
    frees: int = -1
    # (callee, argument index) of the calls whose out-argument lands in the
    # struct the function returns (cresult.py).
    into_result: tuple[tuple[str, int], ...] = ()
    # The parameter whose being NULL the function returns (`int is_null(void
    # *p) { return p == NULL; }`); -1: none.
    null_test: int = -1
    # Whether the body makes anything (`new`, `malloc`): a defined function
    # that does not returns or writes out what already was (gocv's
    # `PointsVector_At` returns the address of an element). None: no body seen.
    allocates: bool | None = None


@dataclass
class CView:
    """The C functions and typedefs a package's own C declares."""

    functions: dict[str, CFunction] = field(default_factory=dict)
    typedefs: dict[str, str] = field(default_factory=dict)
    # The headers a header includes (names as written), for system headers.
    includes: list[bytes] = field(default_factory=list)
    # Function pointers a dlopen loader filled: `cudaMalloc_ptr`, `api.malloc`
    # -> the symbol dlsym looked up ("cudaMalloc").
    loaded: dict[str, str] = field(default_factory=dict)
    # Constants the C names after another value (`const cudnnStatus_t
    # goCudnnSuccess = CUDNN_STATUS_SUCCESS;`, `#define GO_OK cudaSuccess`,
    # `enum { goOK = CUDA_SUCCESS }`): name -> the value as written.
    constants: dict[str, str] = field(default_factory=dict)
    # Function-like macros that paste a name (`#define NVML_DL(x) x##_dl`):
    # macro -> (prefix, suffix), so that `NVML_DL(nvmlInit)(void)` declares
    # nvmlInit_dl.
    name_macros: dict[str, tuple[str, str]] = field(default_factory=dict)
    # Result structs (cresult.py): type name -> (its message field, its payload field or "").
    result_structs: dict[str, tuple[str, str]] = field(default_factory=dict)

    def wrapped(self, function: CFunction) -> str:
        """The API a helper wraps: the call it returns, or the symbol a
        function pointer it calls through was loaded from."""
        return self.loaded.get(function.wraps, function.wraps)

    def resolved_return(self, name: str) -> tuple[tuple[str, ...], bool] | None:
        """The names a function's return type goes by, through the typedefs
        of the package's own C (`gpu_status`, then `cudaError_t`), and
        whether it is a pointer; None for a function this C does not declare."""
        function = self.functions.get(name)
        if function is None:
            return None
        names, pointer = [function.returns], function.pointer
        while names[-1] in self.typedefs:
            target = self.typedefs[names[-1]]
            pointer = pointer or target.endswith("*")
            target = target.rstrip("*").strip()
            if target in names:
                break
            names.append(target)
        return tuple(names), pointer

    def payload(self, type_name: str) -> str:
        """The field of a result struct that stands for the handle it
        carries (`value` of `{void *value; const char *message;}`); "" for
        another type, or a struct with several."""
        return self.result_structs.get(type_name, ("", ""))[1]

    def is_type(self, name: str) -> bool:
        return name in self.typedefs


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_c

    return Parser(Language(tree_sitter_c.language()))


def preamble(parsed: ParsedFile) -> bytes:
    """The cgo preamble: the comments right before `import "C"` (with no
    blank line between them and it)."""
    data = parsed.source.data
    for declaration in parsed.root.named_children:
        if declaration.type != "import_declaration" or b'"C"' not in data[declaration.start_byte:declaration.end_byte]:
            continue
        comments: list[bytes] = []
        following = declaration
        previous = declaration.prev_sibling
        while previous is not None and previous.type == "comment" and previous.end_point[0] + 1 >= following.start_point[0]:
            comments.append(_uncomment(data[previous.start_byte:previous.end_byte]))
            following, previous = previous, previous.prev_sibling
        return b"\n".join(reversed(comments))
    return b""


def _uncomment(text: bytes) -> bytes:
    if text.startswith(b"/*"):
        return text[2:-2]
    return text[2:] if text.startswith(b"//") else text


def view_of(files: list[ParsedFile], directory: Path, configured: tuple[Path, ...] = ()) -> CView:
    """The C the package's cgo files see of their own, and of the headers
    they include from the configured directories and the usual CUDA ones."""
    view = CView()
    sources: list[bytes] = []
    include_dirs = [directory]
    system_dirs: list[Path] = []
    for parsed in files:
        text = preamble(parsed)
        if not text:
            continue
        sources.append(text)
        for flags in _CFLAGS_INCLUDE.findall(text):
            for flag in flags.split():
                if flag.startswith(b"-I${SRCDIR}"):
                    include_dirs.append(directory / flag[len(b"-I${SRCDIR}"):].decode("utf-8", "replace").lstrip("/"))
                elif flag.startswith(b"-I/"):
                    system_dirs.append(Path(flag[2:].decode("utf-8", "replace")))
                elif flag.startswith(b"-I") and len(flag) > 2 and not flag.startswith(b"-I$"):
                    # `-I./include/`: the go command runs cgo in the package directory.
                    include_dirs.append(directory / flag[2:].decode("utf-8", "replace"))
    if not sources:
        return view
    read: set[Path] = set()
    cxx: set[int] = set()  # the indices of C++ sources among `sources`
    pending = local_c_files(directory)
    for text in list(sources):
        pending.extend(_includes(text, include_dirs))
    while pending:
        path = pending.pop()
        try:
            key = path.resolve()
        except (OSError, RuntimeError):  # a symbolic link loop
            continue
        if key in read:
            continue
        read.add(key)
        data = read_c(path)
        if data is None:
            continue
        sources.append(data)
        if path.suffix in _CXX_FILES:
            cxx.add(len(sources) - 1)
        pending.extend(_includes(data, [path.parent, *include_dirs]))
    view.name_macros = _name_macros(sources)
    for index, text in enumerate(sources):
        # C++ the C grammar cannot recover from (a template early in the
        # file) would hide every function after it: each on its own.
        for chunk in (cxx_definitions(text) if index in cxx else [text]):
            root = _parser().parse(chunk).root_node
            if index in cxx and root.has_error and not any(node.type == "function_definition" for node in root.children):
                root = _parser().parse(readable_definition(chunk)).root_node
            _collect(root, view)
    system = _system_view(sources, system_dirs + list(configured) + [d for d in CUDA_INCLUDE_DIRS if d.is_dir()])
    for name, function in system.functions.items():
        view.functions.setdefault(name, function)
    for name, target in system.typedefs.items():
        view.typedefs.setdefault(name, target)
    return view


_NAME_MACRO = re.compile(
    rb"^[ \t]*#[ \t]*define[ \t]+(\w+)\([ \t]*(\w+)[ \t]*\)[ \t]+([\w \t#]+?)[ \t]*(?:/\*.*?\*/[ \t]*|//.*)?$", re.MULTILINE,
)


def _name_macros(sources: list[bytes]) -> dict[str, tuple[str, str]]:
    """`#define NVML_DL(x) x##_dl` (gpu-monitoring-tools' NVML loader),
    `#define API(name) my_##name`: the names such a macro makes."""
    found = {}
    for text in sources:
        if b"##" not in text:
            continue
        for macro, parameter, body in _NAME_MACRO.findall(text):
            pieces = [piece.strip() for piece in body.split(b"##")]
            if len(pieces) < 2 or pieces.count(parameter) != 1 or not all(re.fullmatch(rb"\w+", piece) for piece in pieces):
                continue
            at = pieces.index(parameter)
            found[macro.decode()] = (b"".join(pieces[:at]).decode(), b"".join(pieces[at + 1:]).decode())
    return found


def headers_signature(configured: tuple[Path, ...] = (), usual: bool = True) -> tuple:
    """What the system headers' contents are taken to be, for cache keys: the
    name, size and modification time of each header in the directories read
    (a CUDA upgrade changes it, and with it every key); `usual`: the usual
    CUDA locations too."""
    found = []
    for directory in (*configured, *(CUDA_INCLUDE_DIRS if usual else ())):
        try:
            entries = sorted(directory.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.suffix == ".h":
                try:
                    status = entry.stat()
                except OSError:
                    continue
                found.append((str(entry), status.st_size, status.st_mtime_ns))
    return tuple(found)


def _system_view(sources: list[bytes], directories: list[Path]) -> CView:
    """The declarations of the headers the package's C includes with <...>
    (and those they include), found in `directories`: the CUDA headers."""
    view = CView()
    seen: set[Path] = set()
    pending = [name for text in sources for name in _SYSTEM_INCLUDE.findall(text)]
    while pending:
        name = pending.pop().decode("utf-8", "replace")
        path = next((d / name for d in directories if (d / name).is_file()), None)
        if path is None or path in seen:
            continue
        seen.add(path)
        header = _header(path)
        if header is None:
            continue
        view.functions.update({k: v for k, v in header.functions.items() if k not in view.functions})
        view.typedefs.update({k: v for k, v in header.typedefs.items() if k not in view.typedefs})
        pending.extend(header.includes)
    return view


def _header(path: Path) -> CView | None:
    try:
        status = path.stat()
    except OSError:
        return None
    key = (path, status.st_size, status.st_mtime_ns)
    if key not in _HEADER_CACHE:
        data = read_c(path)
        if data is None:
            return None
        view = CView()
        _collect(_parser().parse(_ATTRIBUTES.sub(lambda m: b" " * len(m.group(0)), data)).root_node, view)
        view.includes = _SYSTEM_INCLUDE.findall(data)
        _HEADER_CACHE[key] = view
    return _HEADER_CACHE[key]


def local_c_files(directory: Path) -> list[Path]:
    """The package directory's C, C++ and CUDA sources and headers, and those of
    its subdirectories that hold no Go (`memory/cuda_malloc.cu`, built by a
    Makefile into the library the package links): what this stage reads of
    it, and what the driver keys a package's cached result by. A file over
    a megabyte is no glue code. (Asked of every package of every run, warm
    ones too: a file's name is looked at before anything is asked of it.)"""
    found: list[Path] = []
    for entry in _entries(directory):
        try:
            if os.path.splitext(entry.name)[1] in _C_SOURCES and entry.is_file():
                if entry.stat().st_size <= _LARGEST_C:
                    found.append(Path(entry.path))
            elif entry.is_dir(follow_symlinks=False) and not entry.name.startswith((".", "_")) and entry.name not in ("vendor", "testdata"):
                inner = _entries(Path(entry.path))
                if not any(item.name.endswith(".go") for item in inner):
                    found += [
                        Path(item.path) for item in inner
                        if os.path.splitext(item.name)[1] in _C_SOURCES and item.is_file() and item.stat().st_size <= _LARGEST_C
                    ]
        except OSError:
            continue
    return found


def _entries(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as scan:
            return sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return []


def glue_makes_objects(directory: Path) -> bool:
    """Whether the package's C++ glue returns objects it makes with `new`
    (what its Go types then own)."""
    for path in local_c_files(directory):
        if path.suffix in _CXX_SOURCES and (data := read_c(path)) is not None and makes_objects(data):
            return True
    return False


_ALLOCATES = re.compile(rb"\bnew\b|\b(?:malloc|calloc|realloc|strdup|strndup)\s*\(")
_CXX_SOURCES = frozenset({".cpp", ".cc", ".cxx", ".cu"})
_CXX_FILES = frozenset({".cpp", ".cc", ".cxx"})
_C_SOURCES = frozenset({".c", ".h", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hpp", ".hh"})
_LARGEST_C = 1 << 20


def _includes(text: bytes, directories: list[Path]) -> list[Path]:
    found = []
    for name in _INCLUDE.findall(text):
        relative = name.decode("utf-8", "replace")
        for directory in directories:
            candidate = directory / relative
            if candidate.is_file():
                found.append(candidate)
                break
    return found


def read_c(path: Path) -> bytes | None:
    """A regular file's bytes, bounded; None for anything else (a FIFO named
    x.h never blocks the run, a huge generated header is skipped)."""
    from cudalint.safeio import InputFileError, read_regular

    try:
        return read_regular(path, MAX_C_BYTES)
    except (OSError, InputFileError):
        return None


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def _pointer_name(node: Node | None) -> str:
    """`cudaMalloc_ptr`, `api.malloc`, `api->malloc`, `*(void **)(&ptr)`: the
    function pointer's name, as calls through it are matched."""
    while node is not None and node.type in ("pointer_expression", "cast_expression", "parenthesized_expression"):
        if node.type == "pointer_expression":
            node = node.child_by_field_name("argument")
        else:
            node = node.named_children[-1] if node.named_children else None
    if node is None or node.type not in ("identifier", "field_expression"):
        return ""
    return _text(node).replace("->", ".").replace(" ", "")


def _loads(root: Node, view: CView) -> None:
    """`ptr = (cast)dlsym(lib, "cudaMalloc")` anywhere: ptr is cudaMalloc."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "assignment_expression":
            value = node.child_by_field_name("right")
            while value is not None and value.type in ("cast_expression", "parenthesized_expression"):
                value = value.named_children[-1] if value.named_children else None
            if value is not None and value.type == "call_expression" and _text(value.child_by_field_name("function")) == "dlsym":
                arguments = (value.child_by_field_name("arguments") or value).named_children
                symbol = arguments[1] if len(arguments) == 2 and arguments[1].type == "string_literal" else None
                name = _pointer_name(node.child_by_field_name("left"))
                if symbol is not None and name:
                    view.loaded[name] = _text(symbol).strip('"')
        stack.extend(node.named_children)


_CONTAINERS = frozenset({"preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif", "linkage_specification", "declaration_list"})


def _collect(root: Node, view: CView) -> None:
    """The declarations of a translation unit, in order, looking into
    conditional blocks and extern "C" without recursing (a header may nest
    #ifdefs deeper than Python's stack)."""
    if b"dlsym" in (root.text or b""):
        _loads(root, view)
    stack = list(reversed(root.named_children))
    while stack:
        node = stack.pop()
        if node.type in _CONTAINERS:
            stack.extend(reversed(node.named_children))
        elif node.type == "type_definition":
            _typedef(node, view)
        elif node.type in ("function_definition", "declaration"):
            function = _function(node, view.name_macros)
            if function is not None and (function.name not in view.functions or node.type == "function_definition"):
                earlier = view.functions.get(function.name)
                if earlier is not None and earlier.passes:
                    # Variants of one function (a CUDA `.cu` and a CPU `.c` build): what either passes on.
                    function = replace(
                        function, passes=tuple(dict.fromkeys(earlier.passes + function.passes)),
                        unfinished=tuple(dict.fromkeys(earlier.unfinished + function.unfinished)),
                    )
                if earlier is not None and earlier.carried and not function.carried:
                    # and the API call whose status either returns in a struct (the CPU build's has none).
                    function = replace(function, carried=earlier.carried, carried_args=earlier.carried_args)
                if earlier is not None and earlier.into_result and not function.into_result:
                    function = replace(function, into_result=earlier.into_result)  # (the CPU build's mallocs)
                view.functions[function.name] = function
            elif node.type == "declaration":
                _constant(node, view)
        elif node.type == "preproc_def":
            value = node.child_by_field_name("value")
            if value is not None and _CONSTANT_VALUE.fullmatch(_text(value).strip()):
                view.constants[_text(node.child_by_field_name("name"))] = _text(value).strip()
        elif node.type == "enum_specifier" and node.child_by_field_name("body") is not None:
            for enumerator in node.child_by_field_name("body").named_children:
                value = enumerator.child_by_field_name("value")
                if enumerator.type == "enumerator" and value is not None and value.type in ("identifier", "number_literal"):
                    view.constants[_text(enumerator.child_by_field_name("name"))] = _text(value)


# A value a constant may be named after: another name, or a plain number.
_CONSTANT_VALUE = re.compile(r"[A-Za-z_]\w*|\d+")


def _constant(node: Node, view: CView) -> None:
    """`const cudnnStatus_t goCudnnSuccess = CUDNN_STATUS_SUCCESS;`"""
    if not any(child.type == "type_qualifier" and _text(child) == "const" for child in node.children):
        return
    for declarator in node.children_by_field_name("declarator"):
        value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
        name = declarator.child_by_field_name("declarator") if value is not None else None
        if name is not None and name.type == "identifier" and value.type in ("identifier", "number_literal"):
            view.constants[_text(name)] = _text(value)


def _typedef(node: Node, view: CView) -> None:
    base = node.child_by_field_name("type")
    for declarator in node.children_by_field_name("declarator"):
        pointer = False
        while declarator is not None and declarator.type == "pointer_declarator":
            pointer = True
            declarator = declarator.child_by_field_name("declarator")
        if declarator is not None and declarator.type == "type_identifier":
            # `typedef enum {...} cublasStatus_t;` names an anonymous type:
            # the typedef's own name is the type's name.
            target = _base_name(base) or _text(declarator)
            view.typedefs[_text(declarator)] = target + ("*" if pointer else "")
            if not pointer and (fields := result_fields(base)) is not None:
                view.result_structs[_text(declarator)] = fields


def _base_name(node: Node | None) -> str:
    """`cudaError_t`, `int`, `enum cudaError` (as `cudaError`), `struct x` (as `x`)."""
    if node is None:
        return ""
    if node.type in ("enum_specifier", "struct_specifier", "union_specifier"):
        return _text(node.child_by_field_name("name"))
    return _text(node)


def _pasted_name(node: Node | None, macros: dict[str, tuple[str, str]]) -> tuple[str, str]:
    """(nvmlInit_dl, nvmlInit) for `NVML_DL(nvmlInit)` where `#define
    NVML_DL(x) x##_dl`: the name declared and the one it is pasted from;
    ("", "") for any other declarator."""
    if node is None or node.type != "function_declarator" or not macros:
        return "", ""
    macro = node.child_by_field_name("declarator")
    arguments = (node.child_by_field_name("parameters") or node).named_children
    if macro is None or _text(macro) not in macros or len(arguments) != 1 or not re.fullmatch(r"\w+", _text(arguments[0])):
        return "", ""
    prefix, suffix = macros[_text(macro)]
    return prefix + _text(arguments[0]) + suffix, _text(arguments[0])


def _function(node: Node, macros: dict[str, tuple[str, str]]) -> CFunction | None:
    declarator = node.child_by_field_name("declarator")
    pointer = False
    while declarator is not None and declarator.type == "pointer_declarator":
        pointer = True
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None or declarator.type != "function_declarator":
        return None
    name_node = declarator.child_by_field_name("declarator")
    name, pasted = (_text(name_node), "") if name_node is not None and name_node.type == "identifier" else _pasted_name(name_node, macros)
    if not name:
        return None
    params, types = [], []
    for parameter in (declarator.child_by_field_name("parameters") or node).named_children:
        if parameter.type != "parameter_declaration":
            continue
        inner = parameter.child_by_field_name("declarator")
        while inner is not None and inner.type in ("pointer_declarator", "array_declarator"):
            inner = inner.child_by_field_name("declarator")
        params.append(_text(inner) if inner is not None and inner.type == "identifier" else "")
        types.append(_base_name(parameter.child_by_field_name("type")))
    function = CFunction(name, _base_name(node.child_by_field_name("type")), pointer, tuple(params), param_types=tuple(types))
    body = node.child_by_field_name("body") if node.type == "function_definition" else None
    if body is not None:
        wrapped = cxx_lifetime(function, body) or _with_wrapped(function, body)
        passes, unfinished = _passed_params(function.params, body)
        return replace(
            wrapped, keeps=_kept_params(function.params, body), passes=passes, unfinished=unfinished,
            frees=_freed_parameter(function.params, body),
            into_result=into_result(body, function.pointer, lambda names: bool(_stored_away(body, names, set(function.params))))
            if function.returns != "void" or function.pointer else (),
            null_test=null_test(body, function.params), allocates=_ALLOCATES.search(body.text or b"") is not None,
        )
    if pasted:
        # Declared only, its name pasted from another's: by convention that
        # function's variant, with its parameters (NVML_DL(nvmlShutdown)).
        return replace(function, wraps=pasted, wrapped_args=tuple(range(len(params))))
    return function


def _only_call(body: Node) -> Node | None:
    """The one call a void helper's body makes, alone or under a guard
    without else (`static void release(void *p) { if (p) free(p); }`):
    such a helper is that call with its status dropped. Declarations that
    call nothing may come first (`llama_context *ctx = (llama_context
    *)state_ptr; llama_free(ctx);`)."""
    statements = [
        child for child in body.named_children
        if child.type != "comment"
        and not (child.type == "declaration" and not any(node.type == "call_expression" for node in syntax.walk(child)))
    ]
    if len(statements) != 1:
        return None
    statement = statements[0]
    if statement.type == "if_statement" and statement.child_by_field_name("alternative") is None:
        inner = statement.child_by_field_name("consequence")
        if inner is not None and inner.type == "compound_statement":
            return _only_call(inner)
        statement = inner
    if statement is None or statement.type != "expression_statement" or not statement.named_children:
        return None
    call = statement.named_children[0]
    return call if call.type == "call_expression" else None


def _is_constant(value: Node | None) -> bool:
    """A status constant (`NVML_SUCCESS`, `0`, `CUDA_ERROR_NOT_FOUND`), `NULL`
    (a pointer-returning helper's failure), or a choice between two (`dlclose(h) ? NVML_ERROR_UNKNOWN : NVML_SUCCESS`)."""
    if value is None:
        return False
    if value.type == "conditional_expression":
        return all(_is_constant(unwrapped(value.child_by_field_name(field))) for field in ("consequence", "alternative"))
    return value.type in ("number_literal", "null") or (value.type == "identifier" and _CONSTANT_NAME.fullmatch(_text(value)) is not None)


def _is_success(value: Node) -> bool:
    """`NVML_SUCCESS`, `cudaSuccess`, `0` (a choice between constants is not one)."""
    return (value.type == "number_literal" and _text(value) == "0") or (
        value.type == "identifier" and "SUCCESS" in _text(value).upper()
    )


# ALL_CAPS constants, and the runtime API's camelCase statuses (`cudaSuccess`, `cudaErrorInvalidValue`).
_CONSTANT_NAME = re.compile(r"[A-Z][A-Z0-9_]*|[a-z]+(Success|Error[A-Za-z0-9]*)")


def _with_wrapped(function: CFunction, body: Node) -> CFunction:
    """A helper whose every return returns the same call's result (or a
    constant: `if (lib == NULL) return NVML_ERROR_LIBRARY_NOT_FOUND;`, a
    loader's guard), or a void helper that makes one call."""
    calls = []
    early_success = False
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type == "return_statement":
            value = unwrapped(next(iter(node.named_children), None))
            if value is None and function.returns == "void" and not function.pointer:
                continue  # `return;` of a void function
            if _is_constant(value):
                early_success = early_success or _is_success(value)
                continue
            if value is not None and value.type == "identifier":
                if function.pointer and _stored_away(body, {_text(value)}, set(function.params)):
                    return function  # also linked into a list a parameter holds: the caller borrows it
                value = assigned_call(body, _text(value))  # `cudaError_t st = cudaMalloc(p, n); ... return st;`
            if value is None or value.type != "call_expression":
                return function
            calls.append(value)
        else:
            stack.extend(node.named_children)
    if not calls and function.returns == "void" and not function.pointer:
        only = _only_call(body) or _frees_parameter(body, function.params)
        calls = [only] if only is not None else []
    names = {_pointer_name(call.child_by_field_name("function")) for call in calls}
    if len(calls) == 0 or len(names) != 1:
        return function
    call = calls[0]
    wrapped = replace(function, wraps=names.pop(), wrapped_args=_mapping(call, function.params, body), succeeds_without_call=early_success)
    inners = [_carried_call(body, c) for c in calls]
    carried = {_pointer_name(inner.child_by_field_name("function")): inner for inner in inners if inner is not None}
    if len(carried) == 1 and None not in inners:
        name, inner = carried.popitem()
        return replace(wrapped, carried=name, carried_args=_mapping(inner, function.params, body))
    return wrapped


def _mapping(call: Node, params: tuple[str, ...], body: Node) -> tuple[int, ...]:
    """Per argument of a call, the index of the parameter passed there as is
    (casts aside), also through a local made of it (`llama_context *ctx =
    (llama_context *)state_ptr; llama_free(ctx);`); -1 for anything else."""
    mapping = []
    for argument in (call.child_by_field_name("arguments") or call).named_children:
        text = _text(unwrapped(argument))
        if text and text not in params:
            text = local_copy_of(body, text)
        mapping.append(params.index(text) if text in params and text else -1)
    return tuple(mapping)


def _carried_call(body: Node, call: Node) -> Node | None:
    """`cudaFree(ptr)` of `kr_status(cudaFree(ptr), NULL)` or of `st =
    cudaFree(ptr); return kr_status(st, NULL);`: the one call among a
    returned call's arguments, where it has one."""
    found = []
    for argument in (call.child_by_field_name("arguments") or call).named_children:
        value = unwrapped(argument)
        if value is not None and value.type == "identifier":
            value = assigned_call(body, syntax.text(value))
        if value is not None and value.type == "call_expression":
            found.append(value)
    return found[0] if len(found) == 1 else None


# (callee, argument index, parameter index) for each parameter passed on.
_Passes = tuple[tuple[str, int, int], ...]


def _passed_params(params: tuple[str, ...], body: Node) -> tuple[_Passes, _Passes]:
    """What `passes` says, and of those, what `unfinished` says: the passes
    no synchronisation follows (`cudaMemcpyAsync(out, ...)` then
    `cudaStreamSynchronize(s)` has finished with `out` when the function returns)."""
    calls = [call for call in syntax.walk(body) if call.type == "call_expression" and call.child_by_field_name("function") is not None]
    synchronised = max((call.start_byte for call in calls if _SYNCHRONISE.search(_text(call.child_by_field_name("function")))), default=-1)
    passes: list[tuple[str, int, int]] = []
    unfinished: list[tuple[str, int, int]] = []
    for call in calls:
        for index, argument in enumerate((call.child_by_field_name("arguments") or call).named_children):
            argument = unwrapped(argument)
            if argument is not None and argument.type == "identifier" and _text(argument) in params:
                passed = (_text(call.child_by_field_name("function")), index, params.index(_text(argument)))
                passes.append(passed)
                if call.start_byte > synchronised:
                    unfinished.append(passed)
    return tuple(passes), tuple(unfinished)


_SYNCHRONISE = re.compile(r"Synchroni[sz]e$")


def _kept_params(params: tuple[str, ...], body: Node) -> tuple[int, ...]:
    """The parameters a function stores where they outlive the call:
    `named_value->string_value = split_value.string_value` (a setter for a
    union cgo cannot write), `*out = p`, `table[i] = p`, `g_handle = p`.
    A store into a local of its own is none."""
    return tuple(sorted(params.index(name) for name in _stored_away(body, params, set(params))))


def _stored_away(body: Node, names: set[str] | tuple[str, ...], params: set[str]) -> set[str]:
    """Which of `names` the body stores where it outlives the call: the
    pointer itself, or a pointer field of a struct parameter
    (`dst->name = src.name`, not `dst[i] = src[i]`, a value read through
    it), into memory a parameter points to or into a global."""
    locals_ = declared_locals(body)
    stored = set()
    for node in syntax.walk(body):
        if node.type != "assignment_expression":
            continue
        value = unwrapped(node.child_by_field_name("right"))
        if value is not None and value.type == "field_expression" and _text(value.child_by_field_name("operator")) == ".":
            value = value.child_by_field_name("argument")  # a field of a struct passed by value
        source = _text(value) if value is not None and value.type == "identifier" else ""
        left = node.child_by_field_name("left")
        target = _root_name(left)
        if source not in names or not source or target == source:
            continue
        through = left is not None and (left.type in ("pointer_expression", "subscript_expression") or (
            left.type == "field_expression" and _text(left.child_by_field_name("operator")) == "->"
        ))
        if (target in params and through) or (target not in params and target not in locals_ and target):
            stored.add(source)
    return stored


def _root_name(node: Node | None) -> str:
    """The variable an lvalue or value is reached from: `v` of `v.f`,
    `v->f.g`, `*v`, `v[i]`."""
    while node is not None and node.type in ("field_expression", "pointer_expression", "subscript_expression", "parenthesized_expression", "cast_expression"):
        if node.type in ("field_expression", "pointer_expression", "subscript_expression"):
            node = node.child_by_field_name("argument")
        else:
            node = node.named_children[-1] if node.named_children else None
    return _text(node) if node is not None and node.type == "identifier" else ""


def _freed_parameter(params: tuple[str, ...], body: Node) -> int:
    """The parameter `free`d by the body, as is or through a local that a
    cast of it initialises; -1 for none or several."""
    aliases = {name: name for name in params if name}
    for node in syntax.walk(body):
        if node.type == "init_declarator":
            value = unwrapped(node.child_by_field_name("value"))
            if value is not None and value.type == "identifier" and _text(value) in aliases:
                aliases[declared_text(node.child_by_field_name("declarator"))] = aliases[_text(value)]
    freed = {
        aliases[argument] for node in syntax.walk(body)
        if node.type == "call_expression" and _text(node.child_by_field_name("function")) == "free"
        and (argument := _text(unwrapped(next(iter((node.child_by_field_name("arguments") or node).named_children), None)))) in aliases
    }
    return params.index(freed.pop()) if len(freed) == 1 else -1


def _frees_parameter(body: Node, params: tuple[str, ...]) -> Node | None:
    """`free(j)` in a void destructor that frees its parameter after its
    fields (`free(j->name); free(j);`): the destructor is that release."""
    found = [
        node for node in syntax.walk(body)
        if node.type == "call_expression" and _text(node.child_by_field_name("function")) == "free"
        and _text(unwrapped(next(iter((node.child_by_field_name("arguments") or node).named_children), None))) in params
    ]
    return found[0] if len(found) == 1 else None

"""The C++ of a binding's glue (gocv's `.cpp` files), read with the C
grammar: cut into one definition at a time, so that a construct it cannot
recover from hides nothing after it, and the two lifetimes a glue function
body says of its C++ objects (`return new T(...)`, `delete p;`)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Protocol, TypeVar

from tree_sitter import Node

from cudalint import syntax


class _Signature(Protocol):
    returns: str
    pointer: bool
    params: tuple[str, ...]


F = TypeVar("F", bound=_Signature)


def makes_objects(text: bytes) -> bool:
    """Whether C++ source returns an object it makes with `new`."""
    return _RETURNS_NEW.search(text) is not None


_RETURNS_NEW = re.compile(rb"\breturn\s+new\b\s*[\w:(]")


def cxx_definitions(text: bytes) -> list[bytes]:
    """A C++ file cut into its top-level definitions (the text since the
    previous one, through the braces of its body), looking into `extern "C"`
    and namespace blocks; comments, strings, character literals and
    preprocessor lines are stepped over so that their braces do not count.
    A stray `}` starts over at the top level, and whatever follows the last
    definition is kept: one construct the scan misreads costs that
    definition, not the rest of the file."""
    chunks: list[bytes] = []
    start, depth, position, size = 0, 0, 0, len(text)
    containers: list[int] = []  # the depths at which an extern "C" or namespace block opened
    line_start = True  # only blanks since the last newline: a `#` there is a directive
    while position < size:
        byte = text[position:position + 1]
        if text.startswith(b"//", position) or (byte == b"#" and line_start):
            end = position
            while True:  # to the end of the line, and of its continuations
                end = text.find(b"\n", end)
                if end < 0 or text[end - 1:end] != b"\\":
                    break
                end += 1
            position, line_start = (size if end < 0 else end + 1), True
            continue
        if byte == b"\n":
            line_start = True
            position += 1
            continue
        if not byte.isspace():
            line_start = False
        if text.startswith(b"/*", position):
            end = text.find(b"*/", position + 2)
            position = size if end < 0 else end + 2
            continue
        if byte == b"'" and text[position - 1:position].isalnum() and text[position + 1:position + 2].isalnum():
            position += 1  # a digit separator (`1'000`)
            continue
        if byte in (b'"', b"'"):
            end = position + 1  # to the closing quote, or the end of the line
            while end < size and text[end:end + 1] not in (byte, b"\n"):
                end += 2 if text[end:end + 1] == b"\\" else 1
            position = end + 1
            continue
        if byte == b"{":
            if depth == 0 or (containers and depth == containers[-1]):
                head = text[start:position]
                if re.search(rb'extern\s*"C"\s*$|\bnamespace\b[\w:\s]*$', head):
                    containers.append(depth + 1)
                    start = position + 1
                elif depth == (containers[-1] if containers else 0):
                    start = _statement_start(text, start, position)
            depth += 1
        elif byte == b"}":
            depth -= 1
            if depth < 0:
                depth, containers, start = 0, [], position + 1  # unbalanced: start over at the top level
            elif containers and depth == containers[-1] - 1:
                containers.pop()
                start = position + 1
            elif depth == (containers[-1] if containers else 0):
                chunks.append(text[start:position + 1])
                start = position + 1
        elif byte == b";" and depth == (containers[-1] if containers else 0):
            start = position + 1  # a declaration: no body to keep
        position += 1
    if text[start:].strip():
        chunks.append(text[start:])
    return chunks or [text]


def readable_definition(chunk: bytes) -> bytes:
    """A C++ definition the C grammar reads as one ERROR (llama.cpp's glue:
    `std::regex r{R"(...)"};`, `std::vector<std::string> v{it, {}};` in the
    body of an `extern "C"` constructor) made readable, offsets kept: `::`
    becomes `__`, and each body statement with a brace initialiser, a
    template argument list or a raw string is blanked. What the lifetimes
    read (the signature, `new`, `return`, `delete`) is C-like and stays."""
    code = bytearray(_strings_blanked(chunk.replace(b"::", b"__")))
    readable = bytearray(_RAW_STRING.sub(lambda match: b"0" + re.sub(rb"[^\n]", b" ", match.group(0)[1:]), chunk.replace(b"::", b"__")))
    body = code.find(b"{")
    position = body + 1
    while body >= 0:
        found = _CXX_ONLY.search(code, position)
        if found is None:
            break
        if found.group(1) in _BLOCK_WORDS:
            position = found.end()
            continue
        start = max(code.rfind(b";", body, found.start()), code.rfind(b"{", body, found.start()), code.rfind(b"}", body, found.start())) + 1
        if _LIFETIME_WORDS.search(code, start, code.find(b";", found.start()) + 1 or len(code)):
            position = found.end()  # what the lifetimes read stays, whatever the C grammar makes of it
            continue
        end, depth = found.start(), 0
        while end < len(code):
            byte = code[end]
            end += 1
            if byte == ord("{"):
                depth += 1
            elif byte == ord("}"):
                depth -= 1
                if depth < 0:
                    end -= 1  # the enclosing block's end: the statement was its last
                    break
            elif byte == ord(";") and depth == 0:
                break
        for index in range(start, end):
            if readable[index] != ord("\n"):
                readable[index] = code[index] = ord(" ")
        position = end
    return bytes(readable)


def _strings_blanked(text: bytes) -> bytes:
    """Comments and string or character literals as blanks, offsets kept."""
    return _LITERALS.sub(lambda match: re.sub(rb"[^\n]", b" ", match.group(0)), text)


_RAW_STRING = re.compile(rb'\bR"([^(\s]*)\(.*?\)\1"', re.DOTALL)
_LITERALS = re.compile(rb'//[^\n]*|/\*.*?\*/|\bR"([^(\s]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
# A brace initialiser (`regex{`), a template argument list (`vector<string>`).
_CXX_ONLY = re.compile(rb"\b([A-Za-z_]\w*)(?:\s*\{|<[\w*, <>]*>)")
_LIFETIME_WORDS = re.compile(rb"\b(?:new|delete|return)\b")
_BLOCK_WORDS = {b"else", b"do", b"try", b"return", b"struct", b"class", b"union", b"enum", b"namespace"}


def _statement_start(text: bytes, start: int, brace: int) -> int:
    """Where the definition whose body opens at `brace` begins: after the
    last preprocessor line or blank line before it."""
    line = text.rfind(b"\n#", start, brace)
    if line >= 0:
        end = text.find(b"\n", line + 1)
        return end + 1 if 0 <= end < brace else start
    return start


def cxx_lifetime(function: F, body: Node) -> F | None:
    """A binding's C++ glue, which the C grammar reads only in part (its
    statements, read as text): a function whose every return makes a C++
    object (`GpuMat GpuMat_New() { return new cv::cuda::GpuMat(); }`) wraps
    `new`; a void function that deletes its parameter (`void
    GpuMat_Close(GpuMat m) { delete m; }`, also through a cast) wraps
    `delete` of it. The knowledge names both (the C++ object of cgo.toml)."""
    body_text = body.text or b""
    # Each return as written up to its `;` (the C grammar may end the
    # statement at `new`, leaving the type to a statement of its own).
    returns = [
        body_text[node.start_byte - body.start_byte:].split(b";", 1)[0].decode("utf-8", "replace") + ";"
        for node in syntax.walk(body) if node.type == "return_statement"
    ]
    made = {match.group(1).encode() for match in map(_RETURNED_NAME.match, returns) if match is not None}
    # `return new T(...)`, or `T *v = new T(...); ...; return v;` (one local, made by new once).
    made_by_new = len(made) == 1 and _made_here_by_new(next(iter(made)), body_text)
    returns_value = function.returns != "void" or function.pointer  # `void *make_params(...)` too
    if returns and returns_value and all(_NEW.match(text) or (made_by_new and _RETURNED_NAME.match(text)) for text in returns):
        return replace(function, wraps="new", wrapped_args=())
    if any(text.strip() not in ("return;", "return") for text in returns) or function.returns != "void" or function.pointer:
        return None
    deleted = {
        match.group(1) for statement in body.named_children
        if (match := _DELETE.match(syntax.text(statement))) is not None
    }
    deleted_name = deleted.pop() if len(deleted) == 1 else None
    name = deleted_name if deleted_name in function.params else _cast_of_parameter(deleted_name, body_text.decode("utf-8", "replace"), function.params)
    if name is not None:
        return replace(function, wraps="delete", wrapped_args=(function.params.index(name),))
    return None


def _cast_of_parameter(local: str | None, body: str, params: tuple[str, ...]) -> str | None:
    """The parameter a local the function deletes was cast from (`T *p = (T
    *) params_ptr; delete p;`, also `static_cast<T *>(params_ptr)`)."""
    if local is None:
        return None
    cast = re.search(
        r"\b" + re.escape(local) + r"\s*=\s*(?:\w+_cast\s*<[^;]*>\s*\(\s*(\w+)\s*\)|\([^;()]*\)\s*(\w+))\s*;", body,
    )
    found = (cast.group(1) or cast.group(2)) if cast is not None else None
    return found if found in params else None


def _made_here_by_new(name: bytes, body: bytes) -> bool:
    """`T *v = new T(...)` (or `Net v = new ...`, `auto v`), once, with v handed to
    nothing but the return (not `g_nets.push_back(v)`, not `g = v`): the
    object is the caller's. A global assigned new (`if (!g) g = new P();`,
    a singleton) is not."""
    word = re.escape(name)
    declared = re.findall(rb"(?:\*\s*|[\w>]\s+)" + word + rb"\s*=\s*new\b\s*[\w:(]", body)
    handed = re.search(rb"[(,=]\s*" + word + rb"\s*[,);]", body)
    return len(declared) == 1 and handed is None


_NEW = re.compile(r"return\s+new\b\s*[\w:(]")
_RETURNED_NAME = re.compile(r"return\s+\(?\s*([A-Za-z_]\w*)\s*\)?\s*;")
# `delete m;`, `delete[] m;`, `delete static_cast<T *>(m);`, `delete (T *)m;`
_DELETE = re.compile(r"delete\s*(?:\[\s*\])?\s*(?:\w+_cast\s*<[^;]*>\s*|\([^;()]*\)\s*)?\(?\s*(\w+)\s*\)?\s*;")

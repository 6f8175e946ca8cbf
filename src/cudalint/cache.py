"""A content-addressed cache of analysis results, one entry per directory.

The key is made of everything a result depends on: the bytes of the
directory's Go files (exactly the bytes the result was computed from),
cudalint's own code (a hash of its source, not sizes and dates), the Python,
tree-sitter and grammar versions, the API knowledge and the effective
configuration. Any change simply misses.

The cache never trusts what it reads and never writes outside itself:

* entries are data (JSON), not code: a header names the format, the key and
  a SHA-256 of the body; an entry whose header, key, checksum or content is
  not exactly right is a miss, never an error and never executed;
* the directory is used only if it is a real directory (not a symbolic
  link) owned by the user and not writable by others; otherwise the run goes
  on without a cache and says so. Inside it, files are opened relative to
  the directory's descriptor with no-follow semantics, special files are
  never opened for reading, and new files are created exclusively and
  renamed into place, so a planted symbolic link (`CACHEDIR.TAG -> ~/.bashrc`)
  is replaced, never followed;
* entries older than MAX_AGE_DAYS are deleted, and the oldest ones beyond
  MAX_BYTES; temporary files are removed on every failure path, and those
  left by a killed run are swept after an hour.
"""

from __future__ import annotations

import dataclasses
import enum
import errno
import functools
import hashlib
import json
import os
import secrets
import stat
import sys
import time
from pathlib import Path
from typing import Any

from cudalint import __version__
from cudalint.findings import Notification, Result

_FORMAT = 3
DEFAULT_DIRECTORY = ".cudalint_cache"
MAX_ENTRY_BYTES = 64 * 1024 * 1024
MAX_BYTES = 512 * 1024 * 1024
MAX_AGE_DAYS = 30
_TEMPORARY_AGE = 3600
_TEMPORARY = ".tmp-"
_MAGIC = b"cudalint-cache"
_GITIGNORE = b"# Automatically created by cudalint.\n*\n"
_TAG = b"Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cudalint.\n"
# What `--clean-cache` requires of a directory before it removes it (app/cleancache.py).
CACHEDIR_TAG = _TAG

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


class CacheRefused(Exception):
    """The cache directory cannot be used safely; the message says why."""


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of cudalint's own source and of the parser it uses, so that a
    development checkout never reads results computed by other code."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        try:
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        except OSError:
            digest.update(b"unreadable")
    for distribution in ("tree-sitter", "tree-sitter-go", "tree-sitter-c"):
        digest.update(f"{distribution}={installed_version(distribution)}\0".encode())
    try:
        import tree_sitter
        import tree_sitter_go

        digest.update(f"abi={tree_sitter.Language(tree_sitter_go.language()).abi_version}\0".encode())
    except Exception:  # noqa: BLE001 - the versions above already say most of it
        pass
    digest.update(f"{sys.version}\0{sys.implementation.cache_tag}\0{_FORMAT}\0{__version__}".encode())
    return digest.hexdigest()


def installed_version(distribution: str) -> str:
    """The version of an installed distribution, read off the name of its
    `.dist-info` directory on the import path (importlib.metadata's imports,
    the email package among them, took a tenth of a warm run); where there
    is none, importlib.metadata's answer, "?" for one not installed."""
    prefix = distribution.replace("-", "_").lower() + "-"
    for name in _dist_infos():
        if name.lower().startswith(prefix):
            return name[len(prefix):-len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:  # pragma: no cover - installed with cudalint
        return "?"


@functools.lru_cache(maxsize=1)
def _dist_infos() -> tuple[str, ...]:
    """The `.dist-info` directories on the import path, in its order (each
    directory listed once, however many versions are asked for)."""
    found: list[str] = []
    for entry in sys.path:
        try:
            found += [name for name in os.listdir(entry or ".") if name.endswith(".dist-info")]
        except OSError:
            continue
    return tuple(found)


# -- results as data ---------------------------------------------------------


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = type(value)
        return {"@": f"{kind.__module__}:{kind.__qualname__}",
                "f": {field.name: _encode(getattr(value, field.name)) for field in dataclasses.fields(value)}}
    if isinstance(value, enum.Enum):
        kind = type(value)
        return {"@": f"{kind.__module__}:{kind.__qualname__}", "v": value.value}
    if isinstance(value, tuple):
        return {"t": [_encode(item) for item in value]}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, dict):
        raise TypeError("dicts are not cached")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot cache a {type(value).__name__}")


def _known_type(name: Any) -> type:
    """A dataclass or enum of cudalint's own, already loaded modules: nothing
    in an entry can name anything else (and nothing is imported)."""
    if not isinstance(name, str) or ":" not in name:
        raise ValueError("bad type")
    module_name, qualname = name.split(":", 1)
    if module_name != "cudalint" and not module_name.startswith("cudalint."):
        raise ValueError("foreign type")
    module = sys.modules.get(module_name)
    kind = getattr(module, qualname, None) if module is not None and "." not in qualname else None
    if not isinstance(kind, type) or not (dataclasses.is_dataclass(kind) or issubclass(kind, enum.Enum)):
        raise ValueError("unknown type")
    return kind


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if isinstance(value, dict):
        if set(value) == {"t"} and isinstance(value["t"], list):
            return tuple(_decode(item) for item in value["t"])
        kind = _known_type(value.get("@"))
        if issubclass(kind, enum.Enum):
            if set(value) != {"@", "v"}:
                raise ValueError("bad enum")
            return kind(value["v"])
        fields = value.get("f")
        if set(value) != {"@", "f"} or not isinstance(fields, dict):
            raise ValueError("bad object")
        names = {field.name for field in dataclasses.fields(kind) if field.init}
        if set(fields) != names:  # a field added or removed: another version's entry
            raise ValueError("fields differ")
        return kind(**{name: _decode(item) for name, item in fields.items()})
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError("bad value")


def _check_result(result: Any) -> Result:
    """The decoded entry must be a Result whose parts have the right types."""
    from cudalint.findings import Finding

    if not isinstance(result, Result):
        raise ValueError("not a result")
    for finding in (*result.findings, *result.suppressed):
        if not isinstance(finding, Finding):
            raise ValueError("not a finding")
    for note in result.notifications:
        if not isinstance(note, Notification):
            raise ValueError("not a notification")
    for count in (result.files_analysed, result.files_skipped, result.internal_errors):
        if type(count) is not int or count < 0:
            raise ValueError("bad count")
    return result


def fingerprint(value: Any) -> str | None:
    """A digest of a value as the cache would store it (the same value
    gives the same digest in every run and process), or None where it
    cannot be stored."""
    try:
        encoded = json.dumps(_encode(value), separators=(",", ":"), ensure_ascii=True, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return None
    return hashlib.sha256(encoded.encode()).hexdigest()


# -- the directory -----------------------------------------------------------


def _open_directory(directory: Path) -> int:
    """A descriptor of the cache directory, created if missing, after
    checking that it is safe to use. CacheRefused otherwise."""
    try:
        status = os.lstat(directory)
    except FileNotFoundError:
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(directory, 0o755)
        except FileExistsError:
            pass
        except OSError as error:
            raise CacheRefused(f"cannot create it: {error.strerror or error}") from None
        try:
            status = os.lstat(directory)
        except OSError as error:
            raise CacheRefused(f"cannot use it: {error.strerror or error}") from None
    except OSError as error:
        raise CacheRefused(f"cannot use it: {error.strerror or error}") from None
    _check_directory(status)
    try:
        fd = os.open(directory, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC)
    except OSError as error:
        raise CacheRefused(f"cannot open it: {error.strerror or error}") from None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (status.st_dev, status.st_ino):  # replaced meanwhile
        os.close(fd)
        raise CacheRefused("it changed while being opened")
    return fd


def _check_directory(status: os.stat_result) -> None:
    if stat.S_ISLNK(status.st_mode):
        raise CacheRefused("it is a symbolic link (cudalint never writes through one)")
    if not stat.S_ISDIR(status.st_mode):
        raise CacheRefused("it is not a directory")
    if hasattr(os, "geteuid") and status.st_uid != os.geteuid():
        raise CacheRefused(f"it is owned by another user (uid {status.st_uid})")
    if status.st_mode & stat.S_IWOTH and not status.st_mode & stat.S_ISVTX:
        raise CacheRefused("anyone may write into it")


class ResultCache:
    def __init__(self, directory: Path, salt: str):
        """Opens (creating if needed) and checks `directory`: CacheRefused if
        it cannot be used safely."""
        self.directory = directory
        self.salt = hashlib.sha256("\0".join((code_fingerprint(), salt)).encode()).hexdigest()
        self._fd = _open_directory(directory)
        self._marked = False
        self._subdirectories: dict[str, int] = {}

    def close(self) -> None:
        for fd in self._subdirectories.values():
            os.close(fd)
        self._subdirectories.clear()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _subdirectory(self, name: str, create: bool) -> int:
        """The descriptor of a fan-out directory (the key's first two hex
        digits), opened without following links and checked like the cache
        directory itself. OSError if it is missing or unusable."""
        fd = self._subdirectories.get(name)
        if fd is not None:
            return fd
        if create:
            try:
                os.mkdir(name, 0o755, dir_fd=self._fd)
            except FileExistsError:
                pass
        fd = os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=self._fd)
        try:
            _check_directory(os.fstat(fd))
        except CacheRefused:
            os.close(fd)
            raise OSError(errno.EPERM, "unusable cache subdirectory") from None
        self._subdirectories[name] = fd
        return fd

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    def __getstate__(self):
        raise TypeError("a ResultCache holds a descriptor; open one per process")

    # -- keys

    def key(self, contents: list[tuple[Path, bytes | Notification]]) -> str:
        """The key of a directory's result: of exactly these bytes (or read
        failures) of its files."""
        digest = hashlib.sha256(self.salt.encode())
        add_contents(digest, contents)
        return digest.hexdigest()

    def derived_key(self, parts: list[str]) -> str:
        """A key made of digests computed elsewhere (a package's own inputs,
        its imports' summaries), under this cache's salt."""
        digest = hashlib.sha256(self.salt.encode())
        for part in parts:
            digest.update(b"\0" + part.encode("utf-8", "surrogateescape"))
        return digest.hexdigest()

    # -- entries

    def get(self, key: str) -> Result | None:
        body = self._body(key)
        if body is None:
            return None
        try:
            return _check_result(_decode(json.loads(body)))
        except (ValueError, TypeError, RecursionError, MemoryError, KeyError, AttributeError):
            return None

    def get_blob(self, name: str) -> bytes | None:
        """The bytes kept under `name` (with this cache's salt) by put_blob."""
        return self._body(self.derived_key([name]))

    def _body(self, key: str) -> bytes | None:
        """The checked body of an entry; None for anything not exactly right."""
        try:
            directory = self._subdirectory(key[:2], create=False)
            fd = os.open(key[2:], os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=directory)
        except OSError:
            return None
        try:
            status = os.fstat(fd)
            if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_ENTRY_BYTES:
                return None
            if hasattr(os, "geteuid") and status.st_uid != os.geteuid():
                return None
            body = self._parse(key, _read_all(fd, MAX_ENTRY_BYTES))
            if body is not None and time.time() - status.st_mtime > 86400:
                try:
                    os.utime(fd)  # entries in use are not evicted by age
                except OSError:
                    pass
            return body
        except Exception:  # noqa: BLE001 - any unusable entry is a miss
            return None
        finally:
            os.close(fd)

    @staticmethod
    def _parse(key: str, data: bytes | None) -> bytes | None:
        if data is None:
            return None
        header, newline, body = data.partition(b"\n")
        if not newline:
            return None
        parts = header.split(b" ")
        if len(parts) != 4 or parts[0] != _MAGIC or parts[1] != str(_FORMAT).encode() or parts[2] != key.encode():
            return None
        if hashlib.sha256(body).hexdigest().encode() != parts[3]:
            return None
        return body

    def put(self, key: str, result: Result) -> None:
        try:
            body = json.dumps(_encode(result), separators=(",", ":"), ensure_ascii=True).encode()
        except (TypeError, ValueError, RecursionError):
            return
        self._put_body(key, body)

    def put_blob(self, name: str, body: bytes) -> None:
        """Keep bytes under `name`, checked like a result when read back."""
        self._put_body(self.derived_key([name]), body)

    def _put_body(self, key: str, body: bytes) -> None:
        header = b" ".join((_MAGIC, str(_FORMAT).encode(), key.encode(), hashlib.sha256(body).hexdigest().encode()))
        if len(header) + 1 + len(body) > MAX_ENTRY_BYTES:
            return
        try:
            self._mark()
            self._write(self._subdirectory(key[:2], create=True), key[2:], header + b"\n" + body)
        except OSError:
            pass  # a cache that cannot be written is no cache, not a failure

    def _write(self, directory: int, name: str, data: bytes) -> None:
        """Create a temporary file exclusively (never through a link), write
        it, and rename it over `name`: a link at `name` is replaced, not
        followed. The temporary file is removed on every failure."""
        temporary = f"{_TEMPORARY}{os.getpid()}-{secrets.token_hex(8)}"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o644, dir_fd=directory)
        try:
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            finally:
                os.close(fd)
            os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=directory)
            except OSError:
                pass
            raise

    def _mark(self) -> None:
        """Keep the cache out of version control and backups, as ruff does:
        `.gitignore` and `CACHEDIR.TAG`, made regular files of our own."""
        if self._marked:
            return
        for name, content in ((".gitignore", _GITIGNORE), ("CACHEDIR.TAG", _TAG)):
            try:
                mode = os.lstat(name, dir_fd=self._fd).st_mode
            except FileNotFoundError:
                mode = None
            if mode is not None and (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                continue  # ours already (or a directory, left alone)
            self._write(self._fd, name, content)  # missing, or a link or special file: replaced
        self._marked = True

    # -- eviction

    def evict(self, max_bytes: int = MAX_BYTES, max_age_days: float = MAX_AGE_DAYS) -> None:
        """Delete entries older than `max_age_days`, then the oldest beyond
        `max_bytes`, and temporary files left by killed runs."""
        now = time.time()
        entries: list[tuple[float, int, int, str]] = []
        try:
            with os.scandir(self._fd) as listing:
                names = [item.name for item in listing if len(item.name) == 2 and item.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for name in names:
            try:
                directory = self._subdirectory(name, create=False)
                with os.scandir(directory) as listing:
                    items = list(listing)
            except OSError:
                continue
            for item in items:
                try:
                    status = item.stat(follow_symlinks=False)
                except OSError:
                    continue
                if item.name.startswith(_TEMPORARY):
                    if now - status.st_mtime > _TEMPORARY_AGE:
                        _unlink(directory, item.name)
                elif not stat.S_ISREG(status.st_mode) or now - status.st_mtime > max_age_days * 86400:
                    _unlink(directory, item.name)
                else:
                    entries.append((status.st_mtime, status.st_size, directory, item.name))
        total = sum(size for _, size, _, _ in entries)
        for _, size, directory, name in sorted(entries, key=lambda entry: (entry[0], entry[3])):
            if total <= max_bytes:
                break
            _unlink(directory, name)
            total -= size


def _unlink(directory: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=directory)
    except OSError:  # a directory, or gone meanwhile: not ours to force
        pass


def _read_all(fd: int, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, 1024 * 1024)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            return None
        chunks.append(chunk)


def add_contents(digest, contents) -> None:
    """Feed files to a digest: each path, and its bytes or the read failure
    (the analysis reports a failure; a key just has to say so)."""
    add_digests(digest, [(path, hashlib.sha256(data).digest() if isinstance(data, bytes) else data) for path, data in contents])


def add_digests(digest, contents) -> None:
    """add_contents for files whose bytes were hashed already (SHA-256):
    the same key as of the bytes."""
    for path, data in contents:
        digest.update(b"\0" + os.fsencode(path) + b"\0")
        if isinstance(data, bytes):
            digest.update(b"bytes\0" + data)
        else:
            digest.update(f"unreadable\0{data.kind.value}\0{data.message}".encode())

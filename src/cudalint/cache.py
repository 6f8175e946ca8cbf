"""A content-addressed cache of analysis results, one entry per directory.

The key is made of everything a result depends on: the bytes of the
directory's Go files, cudalint's own code, the API knowledge and the
effective configuration. An unchanged tree therefore re-runs in the time it
takes to read and hash it, and any change, to the code or to cudalint,
simply misses. Entries are written atomically; a damaged or unreadable entry
is a miss, never an error.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

from cudalint import __version__
from cudalint.findings import Result

_FORMAT = 1
DEFAULT_DIRECTORY = ".cudalint_cache"


def _code_fingerprint() -> str:
    """cudalint's own modules, so that a development checkout never reads
    results computed by older code."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()


class ResultCache:
    def __init__(self, directory: Path, salt: str):
        self.directory = directory
        self.salt = hashlib.sha256(
            "\0".join((str(_FORMAT), __version__, sys.version, _code_fingerprint(), salt)).encode()
        ).hexdigest()

    def key(self, paths: list[Path]) -> str:
        digest = hashlib.sha256(self.salt.encode())
        for path in paths:
            digest.update(b"\0" + str(path).encode() + b"\0")
            try:
                digest.update(hashlib.sha256(path.read_bytes()).digest())
            except OSError as error:  # the analysis reports it; the key just has to differ
                digest.update(f"unreadable:{type(error).__name__}".encode())
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / key[2:]

    def get(self, key: str) -> Result | None:
        try:
            with open(self._path(key), "rb") as stream:
                value = pickle.load(stream)
        except Exception:  # noqa: BLE001 - any unusable entry is a miss
            return None
        return value if isinstance(value, Result) else None

    def put(self, key: str, result: Result) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._mark(self.directory)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(handle, "wb") as stream:
                pickle.dump(result, stream, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, path)
        except OSError:
            pass  # a cache that cannot be written is no cache, not a failure

    @staticmethod
    def _mark(directory: Path) -> None:
        """Keep the cache out of version control and backups, as ruff does."""
        ignore = directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Automatically created by cudalint.\n*\n")
            (directory / "CACHEDIR.TAG").write_text(
                "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cudalint.\n"
            )

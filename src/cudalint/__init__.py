"""cudalint: a static analyzer for Go code that drives NVIDIA GPUs through cgo.

Go's garbage collector cannot see device memory and cgo calls return status
codes that nothing forces anyone to read; cudalint is the missing compiler check.
"""

__version__ = "0.2.0"

# The project's public home, the one URL cudalint may emit (SARIF
# informationUri, --explain, the docs). None until a public home exists: no
# URL the tool prints is a guess. Until then the documentation is the one
# that ships with the source: README.md, docs/rules.md, docs/design.md.
HOME: str | None = None


def __getattr__(name: str):
    """`cudalint.check` without importing the analysis on `import cudalint`
    (the command line's start-up pays only for what it uses)."""
    if name == "check":
        from cudalint.app.api import check

        return check
    raise AttributeError(name)

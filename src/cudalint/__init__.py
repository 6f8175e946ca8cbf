"""cudalint: a static analyzer for Go code that drives NVIDIA GPUs through cgo.

Go's garbage collector cannot see device memory and cgo calls return status
codes that nothing forces anyone to read; cudalint is the missing compiler check.
"""

__version__ = "0.1.0"

"""Third-party modules loaded on first use.

networkx takes about 80 ms to import, a third of cudalint's start-up, and a
run answered by the result cache, or a pre-commit run over files without GPU
code, never builds a graph. `from cudalint.lazy import networkx as nx` binds
a module object that loads itself the first time an attribute is read.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def _lazy(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"cudalint needs the {name} package; install it with pip install {name}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


networkx = _lazy("networkx")

"""Python's cycle collector paused while a large document is built.

Reading YAML makes millions of small dicts, lists and nodes, none of them in a reference cycle: reference
counting frees all the garbage. The collector still starts a pass every few hundred new containers, and its
full passes walk every container alive, so reading a 38 MB live dump took three times as long with it as without
(benchmarks/README.md, drift). The pause ends with the read, whatever way it ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cycle collector off; turn it back on after only if it was on before (nesting is safe)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()

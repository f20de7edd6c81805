"""Beyond one machine: CoCoA+ on Dask with the SDCA engine as each worker's local solver.

``train_cocoa(shards, client=...)`` solves ``train_sdca``'s problem over rows spread across
a Dask cluster; ``simulate_cocoa(X, y, n_shards)`` runs the same rounds in this process.
Dask (``pip install 'dualsolve[distributed]'``) is imported only when ``train_cocoa``
needs it: nothing else in the package imports it. See docs/distributed.md.
"""
from .cocoa import simulate_cocoa, split_rows, train_cocoa

__all__ = ["train_cocoa", "simulate_cocoa", "split_rows"]

"""kvsim from Python: ctypes over the installed libkvsim.so.

    import kvsim
    s = kvsim.run("configs/scenarios/default.json")   # or a dict
    s["latency"]["ttft_s"]["p99"]                     # summary.json, as a dict
    s.timeseries, s.requests                          # rows (DataFrames with pandas)
    kvsim.calc(model="llama-3.1-8b", gpu="h100-sxm")  # kvsim calc --json, as a dict

The library is found through KVSIM_LIB (the .so itself), KVSIM_PREFIX (an
install prefix: PREFIX/lib/libkvsim.so), the system's loader
(libkvsim.so.0 in ldconfig's folders, LD_LIBRARY_PATH), then pkg-config.
"""

from ._lib import KvsimError, library_path
from ._api import Run, calc, run

__all__ = ["KvsimError", "Run", "calc", "library_path", "run"]
__version__ = "0.1.0"

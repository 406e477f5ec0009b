"""Finding and loading libkvsim.so, and the C signatures used (kvsim/memrun.h)."""

import ctypes
import ctypes.util
import os
import subprocess


class KvsimError(Exception):
    """An error kvsim reported: its one line naming where and what."""


def _candidates():
    env = os.environ.get("KVSIM_LIB")
    if env:
        yield env
        return
    prefix = os.environ.get("KVSIM_PREFIX")
    if prefix:
        for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu"):
            yield os.path.join(prefix, libdir, "libkvsim.so")
        return
    yield "libkvsim.so.0"
    found = ctypes.util.find_library("kvsim")
    if found:
        yield found
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "kvsim"], capture_output=True,
                                text=True, check=True, timeout=10).stdout.strip()
        if libdir:
            yield os.path.join(libdir, "libkvsim.so")
    except (OSError, subprocess.SubprocessError):
        pass


_lib = None
_path = None


def _load():
    global _lib, _path
    if _lib is not None:
        return _lib
    tried = []
    for cand in _candidates():
        try:
            lib = ctypes.CDLL(cand)
        except OSError as e:
            tried.append(f"{cand}: {e}")
            continue
        _declare(lib)
        _lib, _path = lib, cand
        return lib
    raise KvsimError("libkvsim.so not found (install it with cmake --install, or set KVSIM_LIB "
                     "or KVSIM_PREFIX); tried: " + "; ".join(tried))


def library_path():
    """The libkvsim.so this module loaded (loading it if need be)."""
    _load()
    return _path


class MemRun(ctypes.Structure):
    _fields_ = [("summary_json", ctypes.c_void_p), ("timeseries_csv", ctypes.c_void_p),
                ("requests_csv", ctypes.c_void_p)]


def _declare(lib):
    strs = ctypes.POINTER(ctypes.c_char_p)
    lib.kvsim_memrun_new.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, strs,
                                     ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    lib.kvsim_memrun_new.restype = ctypes.POINTER(MemRun)
    lib.kvsim_memrun_free.argtypes = [ctypes.POINTER(MemRun)]
    lib.kvsim_memrun_free.restype = None
    lib.kvsim_memrun_calc_json.argtypes = [strs, strs, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    # A pointer, not c_char_p: the text must go back to kvsim_memrun_text_free.
    lib.kvsim_memrun_calc_json.restype = ctypes.c_void_p
    lib.kvsim_memrun_text_free.argtypes = [ctypes.c_void_p]
    lib.kvsim_memrun_text_free.restype = None


def c_strings(items):
    """A NULL-padded char *[] of the items (bytes kept alive by the array)."""
    arr = (ctypes.c_char_p * (len(items) + 1))()
    for i, s in enumerate(items):
        arr[i] = s.encode() if isinstance(s, str) else s
    return arr


def text_at(ptr):
    return ctypes.string_at(ptr).decode() if ptr else ""


def load():
    return _load()

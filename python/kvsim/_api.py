"""kvsim.run and kvsim.calc: scenarios in, dicts and rows out."""

import csv
import ctypes
import io
import json
import os

from . import _lib

_ERR_CAP = 1024


def _frames_default():
    try:
        import pandas  # noqa: F401
        return True
    except ImportError:
        return False


def _cell(v):
    """A CSV cell as a number where it is one; "" as None."""
    if v == "":
        return None
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def _rows(text, frames):
    rows = [{k: _cell(v) for k, v in r.items()} for r in csv.DictReader(io.StringIO(text))]
    if frames:
        import pandas
        return pandas.DataFrame(rows, columns=next(csv.reader(io.StringIO(text)), []))
    return rows


class Run(dict):
    """summary.json of a run, as a dict; .timeseries and .requests are the
    rows of timeseries.csv and requests.csv (lists of dicts, or pandas
    DataFrames), with the same column names."""

    def __init__(self, summary, timeseries, requests):
        super().__init__(summary)
        self.timeseries = timeseries
        self.requests = requests


def _sets(sets):
    if sets is None:
        return []
    if isinstance(sets, dict):
        return [f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in sets.items()]
    return [str(s) for s in sets]


def run(scenario, sets=None, base_dir=None, frames=None):
    """Simulates a scenario, as `kvsim run --no-band --no-verify-advice`.

    scenario: a path (str or os.PathLike) to a scenario JSON, or the
    scenario as a dict (its relative paths against base_dir, default the
    working folder). sets: {"engine.max_num_seqs": 64} or ["KEY=VALUE"], as
    --set. frames: DataFrames for the rows (default: when pandas imports).
    Returns a Run: the summary dict with .timeseries and .requests.
    Raises KvsimError with kvsim's message."""
    lib = _lib.load()
    path = text = None
    if isinstance(scenario, dict):
        text = json.dumps(scenario).encode()
    else:
        path = os.fspath(scenario).encode()
    items = _sets(sets)
    err = ctypes.create_string_buffer(_ERR_CAP)
    base = (base_dir if base_dir is not None else os.getcwd()).encode()
    r = lib.kvsim_memrun_new(path, text, base, _lib.c_strings(items), len(items), err, _ERR_CAP)
    if not r:
        raise _lib.KvsimError(err.value.decode(errors="replace"))
    try:
        c = r.contents
        summary = json.loads(_lib.text_at(c.summary_json))
        ts, rq = _lib.text_at(c.timeseries_csv), _lib.text_at(c.requests_csv)
    finally:
        lib.kvsim_memrun_free(r)
    if frames is None:
        frames = _frames_default()
    return Run(summary, _rows(ts, frames), _rows(rq, frames))


def calc(model=None, gpu=None, engine=None, **flags):
    """The memory plan, as `kvsim calc --json`, as a dict.

    Keyword arguments are calc's flags with '_' for '-'
    (gpu_memory_utilization=0.9 is --gpu-memory-utilization 0.9); True
    gives a switch, False or None leaves a flag out."""
    lib = _lib.load()
    names, values = [], []
    for k, v in (("model", model), ("gpu", gpu), ("engine", engine), *flags.items()):
        if v is None or v is False:
            continue
        names.append("--" + k.replace("_", "-"))
        values.append("" if v is True else str(v))
    err = ctypes.create_string_buffer(_ERR_CAP)
    ptr = lib.kvsim_memrun_calc_json(_lib.c_strings(names), _lib.c_strings(values), len(names), err,
                                     _ERR_CAP)
    if not ptr:
        raise _lib.KvsimError(err.value.decode(errors="replace"))
    try:
        return json.loads(ctypes.string_at(ptr).decode())
    finally:
        lib.kvsim_memrun_text_free(ptr)

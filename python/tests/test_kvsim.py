"""The Python module against the kvsim binary of the same build: the same
summary, rows and plan, errors as KvsimError. Needs KVSIM_BIN (the kvsim
binary) and KVSIM_SRC (the checkout), and the library (KVSIM_LIB or
KVSIM_PREFIX, or an installed one); tests/install/test_python.sh sets them."""

import json
import os
import subprocess
import sys

import pytest

import kvsim

SRC = os.environ.get("KVSIM_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("KVSIM_BIN", "kvsim")
SCENARIO = os.path.join(SRC, "configs", "scenarios", "shared-system-prompt.json")


def cli_run(tmp_path, *sets):
    out = tmp_path / "run"
    cmd = [BIN, "run", SCENARIO, "--quiet", "--no-band", "--no-verify-advice", "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)
    return out


def test_run_matches_the_cli(tmp_path):
    out = cli_run(tmp_path)
    s = kvsim.run(SCENARIO, frames=False)
    want = json.loads((out / "summary.json").read_text())
    assert s == want, "the summary dict is summary.json"
    assert s["latency"]["ttft_s"]["p99"] == want["latency"]["ttft_s"]["p99"]
    ts = (out / "timeseries.csv").read_text().splitlines()
    rq = (out / "requests.csv").read_text().splitlines()
    assert len(s.timeseries) == len(ts) - 1 and len(s.requests) == len(rq) - 1, "a row per CSV line"
    assert list(s.requests[0]) == rq[0].split(","), "the CSV's column names"
    first = dict(zip(rq[0].split(","), rq[1].split(",")))
    assert s.requests[0]["request_id"] == int(first["request_id"])
    assert s.requests[0]["ttft_s"] == float(first["ttft_s"])
    assert s.requests[0]["status"] == first["status"] == "finished"


def test_a_dict_scenario_and_sets(tmp_path):
    with open(SCENARIO) as f:
        sc = json.load(f)
    a = kvsim.run(sc, sets={"engine.max_num_seqs": 8}, base_dir=os.path.dirname(SCENARIO), frames=False)
    b = kvsim.run(SCENARIO, sets=["engine.max_num_seqs=8"], frames=False)
    assert a["latency"] == b["latency"], "a dict runs as its file does"
    want = json.loads((cli_run(tmp_path, "engine.max_num_seqs=8") / "summary.json").read_text())
    assert a["latency"] == want["latency"], "sets as --set"
    assert a["latency"] != kvsim.run(SCENARIO, frames=False)["latency"], "the set changed the run"


def test_empty_cells_are_none():
    s = kvsim.run({"model": "llama-3.1-8b", "seed": 1,
                   "admission": {"max_prompt_tokens": 100},
                   "workload": {"synthetic": {"requests": 20, "arrival": {"process": "poisson", "rate": 5},
                                              "prompt_tokens": {"dist": "uniform", "min": 50, "max": 200},
                                              "output_tokens": 4}}}, frames=False)
    rejected = [r for r in s.requests if r["status"] == "rejected"]
    assert rejected, "some prompts over 100 tokens are refused"
    assert rejected[0]["first_token_s"] is None, "an empty cell is None"
    assert s["requests"]["rejected"] == len(rejected)


def test_frames_with_pandas():
    pandas = pytest.importorskip("pandas")
    s = kvsim.run(SCENARIO, frames=True)
    assert isinstance(s.requests, pandas.DataFrame) and len(s.requests) == s["requests"]["finished"]


def test_calc_matches_the_cli():
    want = json.loads(subprocess.run([BIN, "calc", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                                      "--gpu-memory-utilization", "0.8", "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    got = kvsim.calc(model="llama-3.1-8b", gpu="h100-sxm", gpu_memory_utilization=0.8)
    assert got == want
    tgi = kvsim.calc(model="llama-3.1-8b", gpu="h100-sxm", engine="tgi")
    assert tgi != got, "--engine picks the engine's plan"


def test_errors_are_kvsim_errors():
    with pytest.raises(kvsim.KvsimError, match="unknown model 'nope'"):
        kvsim.calc(model="nope", gpu="h100-sxm")
    with pytest.raises(kvsim.KvsimError, match="unknown flag '--speed'"):
        kvsim.calc(model="llama-3.1-8b", speed=3)
    with pytest.raises(kvsim.KvsimError, match="engine.profile: unknown profile 'bogus'"):
        kvsim.run({"model": "llama-3.1-8b", "engine": {"profile": "bogus"}})
    with pytest.raises(kvsim.KvsimError, match="no-such.json"):
        kvsim.run("no-such.json")


def test_a_missing_library_is_named():
    env = dict(os.environ, KVSIM_LIB="/nonexistent/libkvsim.so")
    r = subprocess.run([sys.executable, "-c", "import kvsim; kvsim.calc(model='llama-3.1-8b')"],
                       env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "libkvsim.so not found" in r.stderr and "/nonexistent" in r.stderr

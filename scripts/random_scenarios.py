#!/usr/bin/env python3
"""Random small scenarios through the command line, every invariant checked.

Generates N random small scenarios (every engine profile; tiny pools, block
sizes 1-128, chunked or not, prefix caching, swap and offload tiers,
SGLang's receive interval (aggregated and on a decode side), priorities, admission limits, bursty arrivals, extreme lengths; a share of
them disaggregated: vLLM's or SGLang's flow, a prefill and a decode pool of
their own sizes) and runs each as `kvsim run S --check-invariants --no-band`
under a timeout, in a folder of its own. What it counts:

  ok         exit 0, summary.json's requests add up (finished + rejected +
             running + waiting = total) and requests.csv has a row each
  refused    exit 2 with one line on stderr (a plan that does not fit, a
             setting a profile does not take): listed by message
  invariant  a refusal that names a broken pool or request invariant
  unnamed    any other refusal that does not name the scenario file
  hang       the timeout reached
  crash      any other exit (a signal, an assert)
  sanitizer  an AddressSanitizer or UBSan report on stderr (an ASan build)
  broken     exit 0 with outputs that do not add up

Each scenario that is not ok or refused is kept under --keep with its
command line. Same seed, same scenarios.

  scripts/random_scenarios.py build/kvsim 300
  scripts/random_scenarios.py build-asan/kvsim 60 --seed 7 --timeout 60
"""
import argparse
import collections
import csv
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

PROFILES = ["vllm-v1", "vllm-v0", "static", "contiguous", "contiguous-pow2", "sglang", "tgi",
            "hf-transformers"]
INVARIANT = re.compile(r"holds \d+ (prefill )?blocks|ref_cnt|holders|is broken|free queue|invariant|hand-off: |"
                       r"blocks? (leaked|lost)|double")


def scenario(rng, i):
    profile = PROFILES[i % len(PROFILES)] if i < 2 * len(PROFILES) else rng.choice(PROFILES)
    v1, v0, sgl = profile == "vllm-v1", profile == "vllm-v0", profile == "sglang"
    tgi, hf = profile == "tgi", profile == "hf-transformers"
    bs = rng.choice([1, 2, 4, 8, 16, 32, 64, 128])
    max_len = 128 << rng.randrange(5)
    blocks = 8 + rng.randrange(400)
    seqs = 1 + rng.randrange(32)
    mnbt = max_len * (1 + rng.randrange(3))
    chunked, prefix = rng.random() < 0.5, rng.random() < 0.5
    prio = rng.random() < 0.33 and not sgl
    disagg = (v1 or sgl) and rng.random() < 0.4
    eng = {"profile": profile, "max_model_len": max_len, "enable_prefix_caching": prefix}
    dtype = rng.choice(["auto", "fp8", "int8", "int4"])
    if (tgi or hf or sgl) and dtype.startswith("int"):
        dtype = "auto"
    eng["kv_cache_dtype"] = dtype
    if sgl:
        eng.update(max_total_tokens=blocks * bs, chunked_prefill_size=mnbt if chunked else -1,
                   max_running_requests=seqs,
                   schedule_policy=rng.choice(["fcfs", "lpm", "lof", "random"]))
    else:
        eng.update(block_size=bs, num_gpu_blocks_override=blocks, max_num_seqs=seqs,
                   max_num_batched_tokens=mnbt, enable_chunked_prefill=chunked)
    if v0 and rng.random() < 0.5:
        eng.update(preemption_mode="swap", swap_space=round(0.0005 + rng.random() * 0.01, 4))
    if v1 and prefix and not disagg and rng.random() < 0.33:
        eng["kv_offloading_size"] = round(0.001 + rng.random() * 0.02, 4)
    if prio:
        eng["scheduling_policy"] = "priority"
    if tgi:
        a = rng.randrange(3)
        eng["num_gpu_blocks_override"] = blocks * 16 if a == 0 else 8 + blocks // 16 if a == 1 else blocks
        eng.update(attention=["flashinfer", "flashdecoding", "paged"][a],
                   cuda_memory_fraction=round(0.5 + rng.random() * 0.5, 2),
                   waiting_served_ratio=round(rng.random(), 2), max_waiting_tokens=1 + rng.randrange(30))
    if hf:
        eng["num_gpu_blocks_override"] = blocks * 16
        eng["enable_prefix_caching"] = False
        for k in ("max_num_seqs", "enable_chunked_prefill", "max_num_batched_tokens"):
            eng.pop(k, None)
        eng.update(cache=rng.choice(["dynamic", "static", "quantized", "offloaded"]), batch=seqs,
                   nbits=2 + 2 * rng.randrange(2), residual_length=rng.randrange(64))
    arrival = rng.choice([{"process": "poisson"}, {"process": "gamma", "cv": 4},
                          {"process": "constant"}])
    arrival["rate"] = round(1 + rng.random() * 60, 3)
    pmax = 1 + rng.randrange(max_len * 2)
    k = rng.randrange(3)
    if k == 0:
        lens = {"prompt_tokens": {"dist": "lognormal", "mean": 1 + pmax // 3, "sigma": 1.2, "max": pmax},
                "output_tokens": {"dist": "uniform", "min": 1, "max": 1 + rng.randrange(300)}}
    elif k == 1:
        lens = {"prompt_tokens": {"dist": "fixed", "value": pmax},
                "output_tokens": {"dist": "fixed", "value": 1 + rng.randrange(3) * 200}}
    else:
        lens = {"prompt_tokens": {"dist": "zipf", "s": 1.1, "max": pmax},
                "output_tokens": {"dist": "zipf", "s": 1.3, "max": 400}}
    syn = {"requests": 10 + rng.randrange(120), "arrival": arrival, **lens}
    shape = rng.randrange(4)
    if shape == 1:
        syn["prefix"] = {"shared_tokens": 1 + rng.randrange(max_len // 2), "groups": 1 + rng.randrange(4)}
    elif shape == 2:
        syn["sessions"] = {"turns": {"dist": "uniform", "min": 1, "max": 4}, "think_s": 0.5}
    if prio:
        syn["priority"] = {"levels": 3}
    sc = {"name": "rand-%d" % i, "seed": rng.randrange(1 << 31), "model": "llama-3.2-1b",
          "hardware": {"gpu": "l4", "replicas": 1 + (rng.random() < 0.2)}, "engine": eng,
          "workload": {"synthetic": syn}, "output": {"max_time_s": 3600}}
    # Admission limits are refused for a disaggregated deployment (not
    # applied there yet): drawn for every scenario, so that the others'
    # draws stay as they were, and kept only where they can run.
    if rng.random() < 0.25 and not disagg:
        sc["admission"] = {"max_queue_length": 1 + rng.randrange(20),
                           "max_wait_s": round(0.5 + rng.random() * 5, 3)}
    if disagg:
        def side():
            s = {}
            if rng.random() < 0.3:
                s["replicas"] = 1 + rng.randrange(2)
            n = 8 + rng.randrange(400)
            s["engine"] = {"max_total_tokens": n * bs} if sgl else {"num_gpu_blocks_override": n}
            return s
        link = {"kind": rng.choice(["nvlink", "infiniband", "roce"])}
        if rng.random() < 0.3:
            link.update(bandwidth_GBps=round(0.1 + rng.random() * 100, 2),
                        latency_us=round(rng.random() * 5000, 1))
        sc["disaggregation"] = {"flow": rng.choice(["vllm", "sglang"]), "prefill": side(),
                                "decode": side(), "link": link}
        # SGLang's decode side polling every N decode steps: its own
        # generator, so that the other draws stay as they were.
        poll = random.Random(i)
        if sgl and sc["disaggregation"]["flow"] == "sglang" and poll.random() < 0.5:
            sc["disaggregation"]["decode"]["engine"]["scheduler_recv_interval"] = 1 + poll.randrange(20)
        sc["hardware"].pop("replicas")
    elif sgl:
        # The aggregated scheduler's receive skipper (SGLang's
        # SchedulerRecvSkipper), from its own generator as above.
        poll = random.Random(i)
        if poll.random() < 0.75:
            eng["scheduler_recv_interval"] = 1 + poll.randrange(40)
    return sc


def check_outputs(out):
    try:
        s = json.load(open(os.path.join(out, "summary.json")))
        r = s["requests"]
        with open(os.path.join(out, "requests.csv")) as f:
            rows = sum(1 for _ in csv.reader(f)) - 1
    except (OSError, ValueError, KeyError) as e:
        return "outputs unreadable: %s" % e
    if r["finished"] + r["rejected"] + r["running_at_end"] + r["waiting_at_end"] != r["total"]:
        return "finished + rejected + running + waiting != total: %s" % r
    if rows != r["total"]:
        return "requests.csv has %d rows for %d requests" % (rows, r["total"])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kvsim")
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--keep", default="results/random-scenarios", help="folder for the failing scenarios")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    counts = collections.Counter()
    refusals = collections.Counter()
    per_profile = collections.Counter()
    tmp = tempfile.mkdtemp(prefix="kvsim-random-")
    t0 = time.time()
    try:
        for i in range(a.n):
            sc = scenario(rng, i)
            kind = sc["engine"]["profile"] + (" disagg" if "disaggregation" in sc else "")
            per_profile[kind] += 1
            path, out = os.path.join(tmp, "s%d.json" % i), os.path.join(tmp, "o%d" % i)
            with open(path, "w") as f:
                json.dump(sc, f)
            cmd = [a.kvsim, "run", path, "--out", out, "--check-invariants", "--no-band", "--quiet"]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
                rc, err = p.returncode, p.stderr
            except subprocess.TimeoutExpired as e:
                rc, err = None, (e.stderr or b"").decode(errors="replace")
            lines = [l for l in err.splitlines() if l and not l.startswith("warning:")]
            if "Sanitizer" in err or "runtime error:" in err:
                what = "sanitizer"
            elif rc is None:
                what = "hang"
            elif rc == 0:
                bad = check_outputs(out)
                what = "broken" if bad else "ok"
                if bad:
                    lines = [bad]
            elif rc == 2 and len(lines) == 1:
                what = ("invariant" if INVARIANT.search(lines[0]) else
                        "refused" if path in lines[0] else "unnamed")
                if what == "refused":
                    msg = lines[0].replace(path, "S")
                    refusals[re.sub(r"-?\d[\d.,e+-]*", "N", msg)[:150]] += 1
            else:
                what = "crash"
            counts[what] += 1
            if what not in ("ok", "refused"):
                os.makedirs(a.keep, exist_ok=True)
                shutil.copy(path, os.path.join(a.keep, "s%d-%d.json" % (a.seed, i)))
                print("%s: scenario %d (%s), exit %s: %s" % (what, i, kind, rc, (lines or [""])[-1][:300]))
            shutil.rmtree(out, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d scenarios in %.0f s (seed %d, timeout %g s): %s" % (
        a.n, time.time() - t0, a.seed, a.timeout,
        ", ".join("%s %d" % (k, counts[k]) for k in
                  ("ok", "refused", "invariant", "unnamed", "hang", "crash", "sanitizer", "broken"))))
    print("by profile: " + ", ".join("%s %d" % kv for kv in sorted(per_profile.items())))
    for msg, n in refusals.most_common():
        print("  refused %3d x %s" % (n, msg))
    return 1 if any(counts[k] for k in ("invariant", "unnamed", "hang", "crash", "sanitizer", "broken")) else 0


if __name__ == "__main__":
    sys.exit(main())

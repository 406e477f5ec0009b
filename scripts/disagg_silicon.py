#!/usr/bin/env python3
"""The disaggregated rows of AIConfigurator's silicon tables against kvsim.

Reads ../shared/validation/aiconfigurator/silicon_{sglang,vllm}.csv (never
copied into the repository) and
1. prints what the disaggregated rows are: counts by engine, model, GPU,
   precision, each side's workers x TP / attention-DP / EP, and whether the
   row records its concurrency (`silicon_concurrency=N` in
   silicon_data_source) and its worker counts;
2. excludes, with a reason, each row kvsim cannot model (the first rule
   that applies, in the order of `excluded` below);
3. simulates the rest, one scenario per row: the row's prefill and decode
   workers and TP, fp8 weights and KV, and, for the InferenceX campaigns
   whose launch is known (LAUNCH below), each side's server flags and the
   link as they ran; the benchmark client as it ran (CLIENT below): the
   row's recorded concurrency as closed-loop clients, ten requests each,
   lengths uniform in [int(0.8 x len), len], the mean over every request
   (the first wave too, as the client's calculate_metrics takes it), plus
   the client's 35.2 ms (KVSIM_FID_CLIENT_US) on TTFT; prints simulated
   against measured mean TTFT and TPOT per row, with the median |error|
   per GPU and over all. Nothing in kvsim was fitted on these rows: the
   step tables, the host terms and the client's 35.2 ms come from the
   aggregated rows and the kernel profiles.
Usage: scripts/disagg_silicon.py [KVSIM] [DATA_DIR]
"""
import collections
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
kvsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "kvsim")
data = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "shared", "validation", "aiconfigurator")
gpus = os.path.join(here, "..", "configs", "gpus")
CLIENT_MS = 35.2  # sim/include/kvsim/fidelity.h KVSIM_FID_CLIENT_US
MAX_TP = 8  # the kernel tables' all-reduce rows go to 8 GPUs (one NVLink node)

# The catalog's names. DeepSeek-R1 is the DeepSeek-V3 architecture (its
# config.json on Hugging Face has the same DeepseekV3ForCausalLM sizes),
# so the R1 rows run as deepseek-v3.
MODELS = {"Qwen/Qwen3-32B": "qwen3-32b", "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
          "deepseek-ai/DeepSeek-V3": "deepseek-v3", "deepseek-ai/DeepSeek-R1": "deepseek-v3"}
GPUS = {"h100_sxm": "h100-sxm", "b200_sxm": "b200", "gb200": "gb200"}


def concurrency(r):
    m = re.search(r"silicon_concurrency=(\d+)", r["silicon_data_source"])
    return int(m.group(1)) if m else None


def side(r, s):
    w = r[f"{s}_num_workers"] or "?"
    dp, ep = r[f"{s}_attention_dp_size"] or "1", r[f"{s}_moe_ep_size"] or "1"
    return f"{w}x TP{r[s + '_tp_size']}" + (f" DP{dp}" if dp not in ("0", "1") else "") + \
        (f" EP{ep}" if ep not in ("0", "1") else "")


# The launch of the campaigns whose recipe is public: InferenceX ran the
# GB200 fp8 disaggregated SGLang rows of 2026-02-09 (PR #635 of
# SemiAnalysisAI/InferenceX, .github/configs/nvidia-master.yaml
# dsr1-fp8-gb200-dynamo-sglang) through srt-slurm's branch
# sa-submission-q1-2026 (NVIDIA/srt-slurm, merged as 5063eb43), one recipe
# per config: the servers' flags per side (kvsim's names), the link
# (MC_FORCE_MNNVL=1 with the NIXL backend: the transfer stays on the NVL72
# domain's NVLink), --scheduler-recv-interval 10 on both sides (kvsim's
# decode side reads it: a busy decode instance receives a request only
# every 10 decode steps, and the prefill waits for it). Both recipes also
# set --disable-radix-cache (the random prompts share nothing) and
# --cuda-graph-max-bs; stream-interval 10 (1k/1k) still streams the first
# token at once.
LAUNCH = {
    # recipes/gb200-fp8/8k1k/low-latency.yaml
    "536": {"engine": {"mem_fraction_static": 0.8, "scheduler_recv_interval": 10},
            "prefill": {"chunked_prefill_size": 24576, "max_total_tokens": 32768, "max_running_requests": 512},
            "decode": {"chunked_prefill_size": 8192, "max_running_requests": 512},
            "link": {"kind": "nvlink"}},
    # recipes/gb200-fp8/1k1k/low-latency.yaml
    "502": {"engine": {"mem_fraction_static": 0.95, "scheduler_recv_interval": 10},
            "prefill": {"chunked_prefill_size": 8192, "max_total_tokens": 8192, "max_running_requests": 512},
            "decode": {"chunked_prefill_size": 8192, "max_running_requests": 128},
            "link": {"kind": "nvlink"}},
}
# The client as it ran: srt-slurm's sa-bench (src/srtctl/benchmarks/scripts/
# sa-bench/bench.sh of that branch): per concurrency c, a warm-up of 2 x c
# prompts drained first, then 10 x c prompts at --request-rate inf with
# --max-concurrency c and --random-range-ratio 0.8, which its
# benchmark_serving.py reads as lengths uniform in [int(len x 0.8), len]
# (sample_random_requests); the mean TTFT and TPOT are over every request
# (calculate_metrics), the first wave of c at once included.
RANGE_RATIO = 0.8
REQUESTS_PER_CLIENT = 10


def config_id(r):
    m = re.search(r"config_id=(\d+)", r["silicon_data_source"])
    return m.group(1) if m else None


def lengths(n):
    lo = int(n * RANGE_RATIO)
    return {"dist": "uniform", "min": lo, "max": n} if lo < n else {"dist": "fixed", "value": n}


def scenario(flow, r, clients, i):
    """The row as a kvsim scenario: both sides from the row, the launch's
    flags and link where LAUNCH knows the campaign (else the engine's
    defaults and InfiniBand), the client as it ran."""
    tp = lambda s: int(r[f"{s}_tp_size"])
    launch = LAUNCH.get(config_id(r), {})
    engine = {"profile": "sglang" if flow == "sglang" else "vllm-v1", "quantization": "fp8", "kv_cache_dtype": "fp8"}
    engine.update(launch.get("engine", {}))
    sides = {}
    for s in ("prefill", "decode"):
        sides[s] = {"tensor_parallel_size": tp(s), "replicas": int(r[f"{s}_num_workers"] or 1)}
        if launch.get(s):
            sides[s]["engine"] = launch[s]
    return {"name": f"silicon-disagg-{i}", "seed": 1, "model": MODELS[r["model_path"]],
            "hardware": {"gpu": GPUS[r["system"]]},
            "engine": engine,
            "disaggregation": {"flow": flow, "link": launch.get("link", {"kind": "infiniband"}), **sides},
            "workload": {"synthetic": {"requests": REQUESTS_PER_CLIENT * clients,
                                       "arrival": {"process": "closed_loop", "clients": clients, "think_s": 0},
                                       "prompt_tokens": lengths(int(r["isl"])),
                                       "output_tokens": lengths(int(r["osl"]))}}}


def client_means(out):
    """Mean TTFT and TPOT (ms) over every finished request of a run, as the
    benchmark client averages them (requests.csv; the summary's TTFT drops
    a closed loop's first wave, which the client counts)."""
    rows = [x for x in csv.DictReader(open(os.path.join(out, "requests.csv"))) if x["status"] == "finished"]
    return (statistics.mean(float(x["ttft_s"]) for x in rows) * 1e3,
            statistics.mean(float(x["tpot_s"]) for x in rows) * 1e3)


def plans(sc, tmp):
    """kvsim calc --scenario --json: each side's plan, or kvsim's error line."""
    p = os.path.join(tmp, "calc.json")
    json.dump(sc, open(p, "w"))
    c = subprocess.run([kvsim, "calc", "--scenario", p, "--json"], capture_output=True, text=True)
    if c.returncode:
        return None, c.stderr.strip().splitlines()[-1]
    j = json.loads(c.stdout)
    for s in ("prefill", "decode"):
        if not j[s]["fits"]:
            text = subprocess.run([kvsim, "calc", "--scenario", p], capture_output=True, text=True).stdout
            line = next((x for x in text.splitlines() if x.startswith(("RuntimeError", "To fit"))), "")
            return None, f"the {s} side; kvsim: to fit, {line.split(': ', 1)[-1]}"
    return j, None


def decode_floor_ms(r, plan, seqs):
    """The least time a decode step can take at the HBM's peak (the rule
    of sim/src/fidelity/physical.c): one rank reads its weights (for a MoE,
    at least the active share) and every running sequence's KV at the mean
    context (prompt + half the output), no more KV than the pool holds."""
    d = plan["decode"]
    bw = json.load(open(os.path.join(gpus, GPUS[r["system"]] + ".json")))["hbm_bandwidth_GBps"] * 1e9
    w = d["weights_bytes"] * d["params_active"] / d["params_total"]
    kv = min(seqs * (int(r["isl"]) + int(r["osl"]) / 2) * d["per_token_kv_bytes"], d["available_kv_bytes"])
    return (w + kv) / bw * 1e3, (w + kv) / 1e9


def excluded(flow, r, tmp):
    """The first reason kvsim cannot model row r, or None."""
    m = r["model_path"]
    if m not in MODELS:
        return f"{m} is not in the catalog"
    if r["system"] not in GPUS:
        return f"{r['system']} is not in the GPU catalog"
    if r["precision"] not in ("fp8", "bf16", ""):
        return f"precision {r['precision']} (NVFP4 weights) is not modelled"
    if any(r[k] not in ("", "0", "1") for k in ("prefill_attention_dp_size", "prefill_moe_ep_size",
                                               "decode_attention_dp_size", "decode_moe_ep_size")):
        return "attention-DP or expert parallelism inside a side (not modelled)"
    if max(int(r["prefill_tp_size"]), int(r["decode_tp_size"])) > MAX_TP:
        return f"TP > {MAX_TP}: more than one node (the all-reduce tables go to {MAX_TP} GPUs)"
    if concurrency(r) is None:
        return "no concurrency recorded (silicon_data_source has no silicon_concurrency=)"
    if not r["prefill_num_workers"] or not r["decode_num_workers"]:
        return "worker counts not recorded: the deployment (how many prefill and decode instances) is unknown"
    plan, err = plans(scenario(flow, r, concurrency(r), 0), tmp)
    if err:
        return f"does not fit at the recorded TP ({MODELS[m]} at TP{r['prefill_tp_size']} on {r['system']}): {err[:120]}"
    floor, _ = decode_floor_ms(r, plan, concurrency(r) / int(r["decode_num_workers"]))
    if float(r["silicon_tpot_ms"]) < floor:
        return "TPOT below its HBM floor at the recorded concurrency"
    return None


def what(rows):
    print(f"{len(rows)} disaggregated rows (engine, model, GPU, precision, prefill : decode, recorded):")
    c = collections.Counter((f, r["model_path"], r["system"], r["precision"] or "bf16",
                             f"{side(r, 'prefill')} : {side(r, 'decode')}",
                             ("concurrency" if concurrency(r) else "no concurrency") +
                             ("" if r["prefill_num_workers"] else ", no worker counts")) for f, r in rows)
    for k, n in sorted(c.items()):
        print(f"  {n:4d}  {k[0]:6s} {k[1]} on {k[2]}, {k[3]}, {k[4]}; {k[5]}")
    # The same deployment at the same concurrency measured more than once:
    # how far apart its figures are says how much the row leaves unrecorded.
    same = collections.defaultdict(list)
    for f, r in rows:
        if concurrency(r):
            same[(f, r["model_path"], r["system"], r["precision"], side(r, "prefill"), side(r, "decode"),
                  r["isl"], r["osl"], concurrency(r))].append(float(r["silicon_tpot_ms"]))
    spread = [(max(v) / min(v), k) for k, v in same.items() if len(v) > 1 and min(v) > 0]
    if spread:
        x, k = max(spread)
        print(f"  {sum(len(same[k2]) for _, k2 in spread)} rows repeat a deployment and concurrency; the widest: "
              f"{k[1]} on {k[2]} {k[4]} : {k[5]} at concurrency {k[8]}, TPOT {min(same[k]):.1f} to "
              f"{max(same[k]):.1f} ms ({x:.1f}x)")


def assumed_load(rows, tmp):
    """The rows without a recorded concurrency, at the load the script once
    assumed (decode_batch_size per decode worker): the HBM floor of that."""
    for f, r in rows:
        if concurrency(r) or r["model_path"] not in MODELS or not r["decode_batch_size"]:
            continue
        if any(r[k] not in ("", "0", "1") for k in ("prefill_attention_dp_size", "decode_attention_dp_size")):
            continue
        plan, err = plans(scenario(f, r, int(r["decode_batch_size"]) * int(r["decode_num_workers"]), 0), tmp)
        if err:
            continue
        floor, gb = decode_floor_ms(r, plan, int(r["decode_batch_size"]))
        print(f"    {f:6s} {r['model_path']} {side(r, 'prefill')} : {side(r, 'decode')}, {r['isl']}/{r['osl']}: "
              f"at decode_batch_size {r['decode_batch_size']} a step reads {gb:.1f} GB per rank, >= {floor:.1f} ms "
              f"at the HBM's peak; measured TPOT {float(r['silicon_tpot_ms']):.1f} ms"
              + (" (impossible)" if float(r["silicon_tpot_ms"]) < floor else ""))


def main():
    t0 = time.time()
    rows = []
    for name, flow in (("silicon_sglang.csv", "sglang"), ("silicon_vllm.csv", "vllm")):
        path = os.path.join(data, name)
        if not os.path.exists(path):
            print(f"skip: {path} not found (the validation data live beside the repository)")
            sys.exit(0)
        rows += [(flow, r) for r in csv.DictReader(open(path)) if r["mode"] == "disagg"]
    what(rows)
    with tempfile.TemporaryDirectory() as tmp:
        why = [(f, r, excluded(f, r, tmp)) for f, r in rows]
        print("excluded (the first rule that applies):")
        for k, n in collections.Counter(w for _, _, w in why if w).most_common():
            print(f"  {n:4d}  {k}")
        print("  the rows without a recorded concurrency, at decode_batch_size clients per decode worker:")
        assumed_load(rows, tmp)
        keep = [(f, r) for f, r, w in why if not w]
        print(f"simulated: {len(keep)} rows, the row's concurrency as closed-loop clients, "
              f"{REQUESTS_PER_CLIENT} requests each, lengths uniform in [{RANGE_RATIO} x len, len], the mean "
              f"over every request; the launch's flags for campaigns {', '.join(sorted(LAUNCH))} "
              f"(nothing in kvsim was fitted on these rows)")
        err = collections.defaultdict(lambda: ([], []))
        for i, (flow, r) in enumerate(keep):
            clients = concurrency(r)
            p = os.path.join(tmp, f"{i}.json")
            json.dump(scenario(flow, r, clients, i), open(p, "w"))
            subprocess.run([kvsim, "run", p, "--no-band", "--quiet", "--out", os.path.join(tmp, str(i))], check=True)
            st, sp = client_means(os.path.join(tmp, str(i)))
            st += CLIENT_MS
            mt, mp = float(r["silicon_ttft_ms"]), float(r["silicon_tpot_ms"])
            err[r["system"]][0].append(abs(st - mt) / mt)
            err[r["system"]][1].append(abs(sp - mp) / mp)
            print(f"  {flow:6s} {r['model_path']} on {r['system']} {r['backend_version']}, {side(r, 'prefill')} : "
                  f"{side(r, 'decode')}, {r['isl']}/{r['osl']}, {clients} clients: TTFT {st:.0f} ms vs {mt:.0f} "
                  f"({100 * (st - mt) / mt:+.0f} %), TPOT {sp:.1f} ms vs {mp:.1f} ({100 * (sp - mp) / mp:+.0f} %)")
    for g, (et, ep) in sorted(err.items()):
        print(f"median |error| on {g} ({len(et)} rows): TTFT {100 * statistics.median(et):.0f} %, "
              f"TPOT {100 * statistics.median(ep):.0f} %")
    et = [e for v in err.values() for e in v[0]]
    ep = [e for v in err.values() for e in v[1]]
    if et:
        print(f"median |error| over all {len(et)} rows: TTFT {100 * statistics.median(et):.0f} %, "
              f"TPOT {100 * statistics.median(ep):.0f} %")
    print(f"wall time {time.time() - t0:.1f} s")


main()

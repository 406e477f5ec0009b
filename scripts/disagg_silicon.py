#!/usr/bin/env python3
"""The disaggregated rows of AIConfigurator's silicon tables against kvsim.

Reads ../shared/validation/aiconfigurator/silicon_{sglang,vllm}.csv (never
copied into the repository), prints what the disaggregated rows are, the
rows kvsim cannot model and why, then simulates the others (one scenario per
row: the row's prefill and decode workers and TP, fp8 weights and KV, fixed
isl/osl, a closed loop of decode_batch_size x decode_num_workers clients,
ten requests per client) and prints simulated against measured mean TTFT
(plus the benchmark client's 35.2 ms, KVSIM_FID_CLIENT_US) and TPOT.
Usage: scripts/disagg_silicon.py [KVSIM] [DATA_DIR]
"""
import collections
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
kvsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "build", "kvsim")
data = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "..", "shared", "validation", "aiconfigurator")
CLIENT_MS = 35.2  # sim/include/kvsim/fidelity.h KVSIM_FID_CLIENT_US


def excluded(r):
    m = r["model_path"]
    dp_ep = any(r[k] not in ("", "0", "1") for k in ("prefill_attention_dp_size", "prefill_moe_ep_size",
                                               "decode_attention_dp_size", "decode_moe_ep_size"))
    if dp_ep:
        return "attention-DP or expert parallelism inside a side (not modelled)"
    if "DeepSeek" in m:
        return "DeepSeek-R1/V3 at TP only: fp8-block / nvfp4 MoE at TP 8-16 not attempted here"
    if "Kimi" in m:
        return "Kimi-K2.5 is not in the catalog"
    if "235B" in m:
        return "Qwen3-235B-A22B fp8 at prefill TP 1 does not fit one H100"
    if r["system"] != "h100_sxm":
        return "GPU not in the catalog"
    return None


rows = []
for name, flow in (("silicon_sglang.csv", "sglang"), ("silicon_vllm.csv", "vllm")):
    path = os.path.join(data, name)
    if not os.path.exists(path):
        print(f"skip: {path} not found (the validation data live beside the repository)")
        sys.exit(0)
    rows += [(flow, r) for r in csv.DictReader(open(path)) if r["mode"] == "disagg"]
what = collections.Counter((f, r["model_path"], r["system"], r["precision"]) for f, r in rows)
print(f"{len(rows)} disaggregated rows:")
for k, n in sorted(what.items()):
    print(f"  {n:4d}  {k[0]:6s} {k[1]} on {k[2]}, {k[3]}")
why = collections.Counter(excluded(r) for _, r in rows if excluded(r))
print("excluded:")
for k, n in why.most_common():
    print(f"  {n:4d}  {k}")
keep = [(f, r) for f, r in rows if not excluded(r)]
et, ep = [], []
with tempfile.TemporaryDirectory() as tmp:
    for i, (flow, r) in enumerate(keep):
        clients = int(r["decode_batch_size"]) * int(r["decode_num_workers"])
        sc = {"name": f"silicon-disagg-{i}", "seed": 1, "model": "qwen3-32b",
              "hardware": {"gpu": "h100-sxm"},
              "engine": {"profile": "sglang" if flow == "sglang" else "vllm-v1",
                         "quantization": "fp8", "kv_cache_dtype": "fp8"},
              "disaggregation": {"flow": flow, "link": {"kind": "infiniband"},
                                 "prefill": {"tensor_parallel_size": int(r["prefill_tp_size"]),
                                             "replicas": int(r["prefill_num_workers"])},
                                 "decode": {"tensor_parallel_size": int(r["decode_tp_size"]),
                                            "replicas": int(r["decode_num_workers"])}},
              "workload": {"synthetic": {"requests": 10 * clients,
                                         "arrival": {"process": "closed_loop", "clients": clients, "think_s": 0},
                                         "prompt_tokens": {"dist": "fixed", "value": int(r["isl"])},
                                         "output_tokens": {"dist": "fixed", "value": int(r["osl"])}}}}
        p = os.path.join(tmp, f"{i}.json")
        json.dump(sc, open(p, "w"))
        subprocess.run([kvsim, "run", p, "--no-band", "--quiet", "--out", os.path.join(tmp, str(i))], check=True)
        lat = json.load(open(os.path.join(tmp, str(i), "summary.json")))["latency"]
        st, sp = lat["ttft_s"]["mean"] * 1e3 + CLIENT_MS, lat["tpot_s"]["mean"] * 1e3
        mt, mp = float(r["silicon_ttft_ms"]), float(r["silicon_tpot_ms"])
        et.append(abs(st - mt) / mt)
        ep.append(abs(sp - mp) / mp)
        print(f"{flow:6s} {r['backend_version']:12s} {r['prefill_num_workers']}P x TP{r['prefill_tp_size']} : "
              f"{r['decode_num_workers']}D x TP{r['decode_tp_size']}, {clients} clients: TTFT {st:.0f} ms vs {mt:.0f} "
              f"({100 * (st - mt) / mt:+.0f} %), TPOT {sp:.1f} ms vs {mp:.1f} ({100 * (sp - mp) / mp:+.0f} %)")
if et:
    print(f"median |error| over {len(et)} rows: TTFT {100 * statistics.median(et):.0f} %, "
          f"TPOT {100 * statistics.median(ep):.0f} %")

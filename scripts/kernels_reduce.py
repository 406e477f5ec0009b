#!/usr/bin/env python3
"""Reduce aiconfigurator's measured vLLM kernel tables to one compact profile per GPU.

Usage: python3 scripts/kernels_reduce.py [--shared DIR] [--out DIR] [--report]

Reads <shared>/<system>/vllm/<version>/*.csv and <shared>/<system>/nccl/<v>/nccl_perf.csv
(tables from https://github.com/ai-dynamo/aiconfigurator, commit 095f58a5, Apache-2.0,
measured by its collector/vllm/collect_*.py and collector/network/collect_*.py) and writes
<out>/<gpu>.json: latencies in microseconds, 4 significant digits. The reduction rules are
in configs/kernels/README.md. Standard library only; the output is deterministic.
Bad input: one line on stderr naming the file and what is wrong, exit 2, nothing written.
"""
import argparse
import bisect
import csv
import json
import math
import os
import sys

SOURCE = "ai-dynamo/aiconfigurator@095f58a51c4ca8e61b66ec108d86f223f8d559ce"

# (kvsim catalog name, aiconfigurator system, vLLM tables, all-reduce table version, device)
SYSTEMS = [
    ("a100-80g", "a100_sxm", "0.14.0", "0.14.0", "NVIDIA A100-SXM4-80GB"),
    ("h100-sxm", "h100_sxm", "0.24.0", "0.24.0", "NVIDIA H100 80GB HBM3"),
    ("h200", "h200_sxm", "0.24.0", "0.24.0", "NVIDIA H200"),
    ("b200", "b200_sxm", "0.24.0", "0.24.0", "NVIDIA B200"),
    # No 0.24.0 all-reduce table for the L40S: its only one was measured with vLLM 0.14.0.
    ("l40s", "l40s", "0.24.0", "0.14.0", "NVIDIA L40S"),
    ("rtx-pro-6000", "rtx_pro_6000_server", "0.24.0", "0.24.0",
     "NVIDIA RTX PRO 6000 Blackwell Server Edition"),
]

GEMM_M = [1 << i for i in range(16)]  # 1 .. 32768
GEMM_DTYPES = ["bfloat16", "fp8", "fp8_block", "nvfp4"]
GEMM_MIN_COVERAGE = 0.90
TP_SIZES = [1, 2, 4, 8]
GENERIC_HEADS = [1, 8, 32, 64]
GENERIC_KV = [1, 8]
MOE_DISTRIBUTIONS = ["balanced", "power_law_1.01"]
MOE_MAX_GPUS = 8
# The MLA module tables time the attention block of DeepSeek-V3 as vLLM builds it
# (collector/vllm/collect_mla_module.py); a catalog model reads them when its MLA block has
# these dimensions. Context rows: bf16 prefill queries only (vLLM's default; the fp8-query
# rows need attention_config.use_prefill_query_quantization).
MLA_MODULE_SHAPE = {"hidden": 7168, "q_lora_rank": 1536, "kv_lora_rank": 512,
                    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128}
MLA_MODULE_COLS = ["model", "mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads",
                   "batch_size", "isl", "tp_size", "step", "latency"]


class InputError(Exception):
    pass


def fail(msg):
    sys.stderr.write("kernels_reduce: %s\n" % msg)
    sys.exit(2)


def us(ms):
    """Milliseconds to microseconds, 4 significant digits, as a plain JSON number."""
    if ms is None:
        return None
    v = float("%.4g" % (ms * 1000.0))
    return int(v) if v.is_integer() else v


def read_table(path, columns, optional=()):
    """Rows of a CSV as lists of raw strings in the order of `columns` (read by name)."""
    try:
        f = open(path, newline="")
    except OSError as e:
        raise InputError("%s: cannot open (%s)" % (path, e.strerror))
    with f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None:
            raise InputError("%s: empty file, expected a header line" % path)
        idx = []
        for c in columns:
            if c in header:
                idx.append(header.index(c))
            elif c in optional:
                idx.append(None)
            else:
                raise InputError("%s: no column '%s' in the header" % (path, c))
        rows = []
        for lineno, rec in enumerate(reader, start=2):
            if len(rec) != len(header):
                raise InputError("%s:%d: %d fields, the header has %d"
                                 % (path, lineno, len(rec), len(header)))
            rows.append((lineno, [rec[i] if i is not None else None for i in idx]))
        return rows


def as_int(path, lineno, col, s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        raise InputError("%s:%d: column '%s' is '%s', not a number" % (path, lineno, col, s))
    if not math.isfinite(v) or v != int(v):
        raise InputError("%s:%d: column '%s' is '%s', not an integer" % (path, lineno, col, s))
    return int(v)


def as_latency(path, lineno, s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        raise InputError("%s:%d: latency is '%s', not a number" % (path, lineno, s))
    if not math.isfinite(v) or v <= 0:
        raise InputError("%s:%d: latency is '%s', not a positive finite number"
                         % (path, lineno, s))
    return v


class Dups:
    """Repeated keys: the first row is kept (as the source's own loader does)."""

    def __init__(self):
        self.count = 0
        self.identical = 0

    def add(self, store, key, value):
        if key in store:
            self.count += 1
            if store[key] == value:
                self.identical += 1
            return
        store[key] = value


# ---------------------------------------------------------------- catalog models

def load_models(models_dir):
    models = []
    try:
        names = sorted(n for n in os.listdir(models_dir) if n.endswith(".json"))
    except OSError as e:
        raise InputError("%s: cannot list (%s)" % (models_dir, e.strerror))
    for name in names:
        path = os.path.join(models_dir, name)
        try:
            with open(path) as f:
                cfg = json.load(f)
        except (OSError, ValueError) as e:
            raise InputError("%s: not readable JSON (%s)" % (path, e))
        # Multimodal configs (Gemma 3) keep the language model under text_config.
        if isinstance(cfg.get("text_config"), dict):
            cfg = dict(cfg, **cfg["text_config"])
        models.append((name, cfg))
    return models


def attention_needs(models):
    """(head_dim, heads, kv_heads, window) per rank at TP 1, 2, 4, 8 for the catalog models,
    at full attention only: the step model reads a sliding-window layer from the full table
    at the clipped length (sim/src/perf/attention.c), so the window rows are not kept (the
    report measures that reading's error on them). MLA models attend as ordinary heads of
    qk_nope + rope dims at prefill and over one latent of kv_lora_rank (+ rope) dims at
    decode."""
    needs = set()
    for name, c in models:
        h = c.get("num_attention_heads")
        if not isinstance(h, int) or h <= 0:
            continue
        for tp in TP_SIZES:
            if h % tp:
                continue  # vLLM needs the query heads to divide by TP
            if c.get("kv_lora_rank"):
                needs.add((c["qk_nope_head_dim"] + c["qk_rope_head_dim"], h // tp, h // tp, 0))
                needs.add((512, h // tp, 1, 0))
                continue
            kv = c.get("num_key_value_heads") or h
            hd = c.get("head_dim") or c["hidden_size"] // h
            needs.add((hd, h // tp, max(1, kv // tp), 0))
    return needs


def mla_module_heads(models):
    """Per-rank heads at TP 1, 2, 4, 8 of the catalog models whose MLA block has the
    dimensions the module tables were measured with."""
    heads = set()
    for name, c in models:
        h = c.get("num_attention_heads")
        if not c.get("kv_lora_rank") or not isinstance(h, int):
            continue
        dims = {"hidden": c.get("hidden_size")}
        dims.update({k: c.get(k) for k in MLA_MODULE_SHAPE if k != "hidden"})
        if dims != MLA_MODULE_SHAPE:
            continue
        heads.update(h // tp for tp in TP_SIZES if h % tp == 0)
    return heads


def moe_shapes(models):
    shapes = set()
    for name, c in models:
        experts = c.get("num_experts") or c.get("num_local_experts") or c.get("n_routed_experts")
        topk = c.get("num_experts_per_tok")
        if not experts or not topk:
            continue
        inter = c.get("moe_intermediate_size") or c.get("intermediate_size")
        shapes.add((c["hidden_size"], inter, topk, experts))
    return shapes


# ---------------------------------------------------------------- GEMM

def fill_along_m(ms, ts, m):
    """Latency at m from the measured (ms, ts) of one (n, k), ms sorted."""
    i = bisect.bisect_left(ms, m)
    if i < len(ms) and ms[i] == m:
        return ts[i]
    if i == 0:
        return ts[0]
    if i == len(ms):
        return ts[-1] * m / ms[-1]
    m0, m1, t0, t1 = ms[i - 1], ms[i], ts[i - 1], ts[i]
    return t0 + (t1 - t0) * (m - m0) / (m1 - m0)


def nearest(values, x):
    """The value nearest to x in log distance; ties go to the smaller one."""
    best = None
    for v in sorted(values):
        d = abs(math.log(x / v))
        if best is None or d < best[0]:
            best = (d, v)
    return best[1] if best else None


def reduce_gemm(path):
    rows = read_table(path, ["gemm_dtype", "m", "n", "k", "latency"])
    meas = {}  # dtype -> (n, k) -> {m: ms}
    dups = Dups()
    for ln, (dt, m, n, k, lat) in rows:
        m, n, k = (as_int(path, ln, c, v) for c, v in (("m", m), ("n", n), ("k", k)))
        dups.add(meas.setdefault(dt, {}).setdefault((n, k), {}), m, as_latency(path, ln, lat))
    ns = sorted({n for d in meas.values() for (n, k) in d})
    ks = sorted({k for d in meas.values() for (n, k) in d})
    kept_m = set(GEMM_M)
    total = len(GEMM_M) * len(ns) * len(ks)
    out = {"dtypes": {}, "filled": {}, "coverage": {}, "left_out": [], "dups": dups,
           "n": ns, "k": ks, "meas": meas}
    for dt in GEMM_DTYPES:
        if dt not in meas:
            continue
        shapes = meas[dt]
        covered = sum(1 for nk, col in shapes.items() for m in col if m in kept_m)
        out["coverage"][dt] = (covered, total)
        # bfloat16 is every GPU's baseline; the A100's 0.14.0 grid stops at m = 8192, so
        # 2 of its 16 kept m values are never measured (87.5 % at most): kept regardless.
        if covered < GEMM_MIN_COVERAGE * total and dt != "bfloat16":
            out["left_out"].append(dt)
            continue
        cols = {}
        for nk, col in shapes.items():
            ms = sorted(col)
            ts = [col[m] for m in ms]
            cols[nk] = [fill_along_m(ms, ts, m) for m in GEMM_M]
        filled = total - covered
        grid = []
        for n in ns:
            plane = []
            for k in ks:
                if (n, k) in cols:
                    plane.append(cols[(n, k)])
                    continue
                ksame = [k2 for (n2, k2) in cols if n2 == n]
                nsame = [n2 for (n2, k2) in cols if k2 == k]
                if ksame:
                    k2 = nearest(ksame, k)
                    plane.append([t * k / k2 for t in cols[(n, k2)]])
                elif nsame:
                    n2 = nearest(nsame, n)
                    plane.append([t * n / n2 for t in cols[(n2, k)]])
                else:
                    plane.append([None] * len(GEMM_M))
                    filled -= len(GEMM_M)
            grid.append(plane)
        out["dtypes"][dt] = grid
        out["filled"][dt] = filled
    return out


def gemm_errors(g):
    """Left-out m rows of each kept dtype against interpolation between kept m."""
    errs = []
    kept_m = set(GEMM_M)
    for dt, grid in g["dtypes"].items():
        for (n, k), col in g["meas"][dt].items():
            kept = [us(t) for t in grid[g["n"].index(n)][g["k"].index(k)]]
            for m, ms in col.items():
                if m in kept_m:
                    continue
                pred = fill_along_m(GEMM_M, kept, m)
                errs.append(abs(pred - ms * 1000.0) / (ms * 1000.0))
    return errs


# ---------------------------------------------------------------- attention

ATTN_COLS = ["batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim",
             "kv_cache_dtype", "step", "window_size", "latency"]


def read_attention(path, generation, step_is_cached):
    rows = read_table(path, ATTN_COLS, optional=("window_size",))
    cells = {}  # (hd, window, kvdt, H, KV) -> {(batch, x): ms}
    dups = Dups()
    for ln, (b, isl, h, kv, hd, kvdt, step, win, lat) in rows:
        b, isl, h, kv, hd, step = (as_int(path, ln, c, v) for c, v in (
            ("batch_size", b), ("isl", isl), ("num_heads", h),
            ("num_key_value_heads", kv), ("head_dim", hd), ("step", step)))
        win = 0 if win is None else as_int(path, ln, "window_size", win)
        if generation:
            # 0.24.0: step = tokens cached before this one, so step + 1 keys are attended;
            # 0.14.0: step already counts the new token.
            x = step + 1 if step_is_cached else step
        else:
            x = isl
        dups.add(cells.setdefault((hd, win, kvdt, h, kv), {}), (b, x), as_latency(path, ln, lat))
    return cells, dups


def keep_pairs(ctx, gen, needs):
    """The (head_dim, window, heads, kv_heads) kept: each catalog need's exact pair, else its
    measured neighbours in heads at the same head_dim (same kv_heads if measured, else the
    nearest); its window, else the measured windows nearest below and above; plus the
    generic pairs at full attention for every head_dim."""
    measured, windows = {}, {}
    for cells in (ctx, gen):
        for (hd, win, kvdt, h, kv) in cells:
            measured.setdefault(hd, set()).add((h, kv))
            windows.setdefault(hd, set()).add(win)
    keep = set()
    for hd, h, kv, w in sorted(needs):
        pairs = measured.get(hd, set())
        if not pairs:
            continue
        if (h, kv) in pairs:
            chosen = [(h, kv)]
        else:
            kvs = {p[1] for p in pairs}
            kv2 = kv if kv in kvs else nearest(kvs, kv)
            hs = sorted(p[0] for p in pairs if p[1] == kv2)
            chosen = [(x, kv2) for x in ([x for x in hs if x <= h][-1:] + [x for x in hs if x >= h][:1])]
        if w == 0 or w in windows[hd]:
            wins = [w]
        else:
            ws = sorted(x for x in windows[hd] if x > 0)
            wins = [x for x in ws if x < w][-1:] + [x for x in ws if x > w][:1]
        for win in wins:
            for p in chosen:
                keep.add((hd, win) + p)
    for hd, pairs in measured.items():
        for h in GENERIC_HEADS:
            for kv in GENERIC_KV:
                if (h, kv) in pairs:
                    keep.add((hd, 0, h, kv))
    return keep


def attention_entries(cells, keep, xname):
    out = []
    for key in sorted(cells):
        hd, win, kvdt, h, kv = key
        if (hd, win, h, kv) not in keep:
            continue
        c = cells[key]
        batches = sorted({b for b, x in c})
        xs = sorted({x for b, x in c})
        out.append({"head_dim": hd, "window": win, "kv_dtype": kvdt, "num_heads": h,
                    "num_kv_heads": kv, "batch": batches, xname: xs,
                    "us": [[us(c.get((b, x))) for x in xs] for b in batches]})
    return out


def attention_errors(cells, keep, generation):
    """Left-out pairs predicted from the nearest kept pair, scaled by heads (context) or
    KV heads (generation). Returns {full attention?: (relative errors, cells with no kept
    counterpart)}."""
    kept = {}
    for key in cells:
        if (key[0], key[1], key[3], key[4]) in keep:
            kept.setdefault(key[:3], []).append((key[3], key[4]))
    out = {True: ([], [0]), False: ([], [0])}
    for key in sorted(cells):
        hd, win, kvdt, h, kv = key
        if (hd, win, h, kv) in keep:
            continue
        errs, missed = out[win == 0]
        if win > 0:
            window_errors(cells, key, kept, generation, errs, missed)
            continue
        cands = kept.get((hd, win, kvdt))
        if not cands:
            missed[0] += len(cells[key])
            continue
        h2, kv2 = min(cands, key=lambda p: (abs(math.log(h / p[0])) + abs(math.log(kv / p[1])),
                                            p[0], p[1]))
        ref = cells[(hd, win, kvdt, h2, kv2)]
        scale = kv / kv2 if generation else h / h2
        for bx, ms in cells[key].items():
            if bx not in ref:
                missed[0] += 1
                continue
            pred = us(ref[bx]) * scale
            errs.append(abs(pred - ms * 1000.0) / (ms * 1000.0))
    return {full: (e, m[0]) for full, (e, m) in out.items()}


def window_errors(cells, key, kept, generation, errs, missed):
    """A sliding-window row read as the step model reads it: the full-attention table of
    the nearest kept pair at the clipped length (decode: min(keys, window) keys; prefill:
    the prompt length whose causal pairs equal the windowed pairs)."""
    hd, win, kvdt, h, kv = key
    cands = kept.get((hd, 0, kvdt))
    if not cands:
        missed[0] += len(cells[key])
        return
    h2, kv2 = min(cands, key=lambda p: (abs(math.log(h / p[0])) + abs(math.log(kv / p[1])), p[0], p[1]))
    ref = cells[(hd, 0, kvdt, h2, kv2)]
    scale = kv / kv2 if generation else h / h2
    for (b, x), ms in cells[key].items():
        if generation:
            length = min(x, win)
        else:  # sum over i = 1..x of min(i, win) pairs, as a causal prompt of length s
            n = min(x, win)
            pairs = n * (n + 1) / 2 + (x - n) * win
            length = (math.sqrt(1 + 8 * pairs) - 1) / 2
        pred = interp_len(ref, b, length)
        if pred is None:
            missed[0] += 1
            continue
        errs.append(abs(pred * scale - ms * 1000.0) / (ms * 1000.0))


def interp_len(ref, b, length):
    """us at batch b and a length between the measured ones (linear), None if unmeasured."""
    xs = sorted(x for bb, x in ref if bb == b)
    if not xs:
        return None
    if length <= xs[0]:
        return us(ref[(b, xs[0])])
    for lo, hi in zip(xs, xs[1:]):
        if lo <= length <= hi:
            w = (length - lo) / (hi - lo)
            return us(ref[(b, lo)]) + w * (us(ref[(b, hi)]) - us(ref[(b, lo)]))
    return us(ref[(b, xs[-1])]) * length / xs[-1]


# ---------------------------------------------------------------- collectives, MoE

def reduce_allreduce(path):
    rows = read_table(path, ["kernel_source", "num_gpus", "message_size", "latency", "backend"])
    cells, dups = {}, Dups()
    for ln, (src, g, size, lat, backend) in rows:
        label = (src + " " + backend).lower()
        mode = "graph" if "graph" in label else "eager" if "eager" in label else None
        if mode is None:
            raise InputError("%s:%d: neither 'graph' nor 'eager' in kernel_source '%s' / "
                             "backend '%s'" % (path, ln, src, backend))
        g = as_int(path, ln, "num_gpus", g)
        size = as_int(path, ln, "message_size", size)
        dups.add(cells.setdefault((g, mode), {}), 2 * size, as_latency(path, ln, lat))
    out = []
    for (g, mode) in sorted(cells):
        c = cells[(g, mode)]
        sizes = sorted(c)
        out.append({"num_gpus": g, "mode": mode, "bytes": sizes, "us": [us(c[s]) for s in sizes]})
    return out, dups


def reduce_nccl(path):
    rows = read_table(path, ["op_name", "nccl_dtype", "num_gpus", "message_size", "latency"])
    cells, dups = {}, Dups()
    for ln, (op, dt, g, size, lat) in rows:
        if dt != "half":
            continue
        g = as_int(path, ln, "num_gpus", g)
        size = as_int(path, ln, "message_size", size)
        dups.add(cells.setdefault((op, g), {}), 2 * size, as_latency(path, ln, lat))
    out = []
    for (op, g) in sorted(cells):
        c = cells[(op, g)]
        sizes = sorted(c)
        out.append({"op": op, "num_gpus": g, "bytes": sizes, "us": [us(c[s]) for s in sizes]})
    return out, dups


def reduce_moe(path, shapes):
    cols = ["moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
            "moe_tp_size", "moe_ep_size", "distribution", "latency"]
    rows = read_table(path, cols)
    cells, dups = {}, Dups()
    for ln, rec in rows:
        dt, dist = rec[0], rec[8]
        if dist not in MOE_DISTRIBUTIONS:
            continue
        tok, hid, inter, topk, ne, tp, ep = (as_int(path, ln, c, v)
                                            for c, v in zip(cols[1:8], rec[1:8]))
        if (hid, inter, topk, ne) not in shapes or tp * ep > MOE_MAX_GPUS:
            continue
        dups.add(cells.setdefault((dt, hid, inter, topk, ne, tp, ep, dist), {}), tok,
                 as_latency(path, ln, rec[9]))
    out = []
    for key in sorted(cells):
        dt, hid, inter, topk, ne, tp, ep, dist = key
        # Skewed routing is what the step model reads (sim/src/perf/kernels.c); the
        # balanced rows only where a shape has no skewed ones.
        if dist == "balanced" and key[:7] + ("power_law_1.01",) in cells:
            continue
        c = cells[key]
        toks = sorted(c)
        out.append({"dtype": dt, "hidden": hid, "inter": inter, "topk": topk, "experts": ne,
                    "tp": tp, "ep": ep, "distribution": dist, "tokens": toks,
                    "us": [us(c[t]) for t in toks]})
    return out, dups


# ---------------------------------------------------------------- MLA module

def read_mla_module(path, generation):
    """{(gemm_type, kv dtype, heads, mla_dtype): {(batch, length): ms}}. Generation: length =
    `step` = the sequence length with the new token (the keys it attends to); context:
    length = `isl`, nothing cached (`step` 0 in every row, checked)."""
    rows = read_table(path, MLA_MODULE_COLS)
    cells, dups = {}, Dups()
    for ln, (model, mdt, kvdt, gt, h, b, isl, tp, step, lat) in rows:
        h, b, isl, tp, step = (as_int(path, ln, c, v) for c, v in (
            ("num_heads", h), ("batch_size", b), ("isl", isl), ("tp_size", tp), ("step", step)))
        if model != "deepseek-ai/DeepSeek-V3" or tp != 1:
            raise InputError("%s:%d: model '%s' tp_size %d; expected deepseek-ai/DeepSeek-V3 "
                             "built with tp_size 1" % (path, ln, model, tp))
        if not generation and step != 0:
            raise InputError("%s:%d: step %d in a context row; expected 0 (nothing cached)"
                             % (path, ln, step))
        x = step if generation else isl
        dups.add(cells.setdefault((gt, kvdt, h, mdt), {}), (b, x), as_latency(path, ln, lat))
    return cells, dups


def mla_module_entries(cells, heads, generation):
    out = []
    xname = "seq_len" if generation else "isl"
    for key in sorted(cells):
        gt, kvdt, h, mdt = key
        if h not in heads or mdt != "bfloat16":
            continue
        c = cells[key]
        batches = sorted({b for b, x in c})
        xs = sorted({x for b, x in c})
        e = {"phase": "generation" if generation else "context", "gemm": gt, "kv_dtype": kvdt,
             "num_heads": h}
        e.update(MLA_MODULE_SHAPE)
        e.update({"batch": batches, xname: xs,
                  "us": [[us(c.get((b, x))) for x in xs] for b in batches]})
        out.append(e)
    return out


def mla_module_errors(cells, heads):
    """What reading the kept tables between their grid points costs: each kept cell inside
    the length grid predicted by linear interpolation between its two neighbours (twice the
    grid's spacing) at the same batch, as the step model interpolates. Also counts the rows
    left out (other heads, fp8 prefill queries)."""
    errs, left = [], 0
    for key, c in cells.items():
        if key[2] not in heads or key[3] != "bfloat16":
            left += len(c)
            continue
        for (b, x), ms in c.items():
            xs = sorted(xx for bb, xx in c if bb == b)
            i = xs.index(x)
            if i == 0 or i == len(xs) - 1:
                continue
            lo, hi = xs[i - 1], xs[i + 1]
            w = (x - lo) / (hi - lo)
            pred = us(c[(b, lo)]) + w * (us(c[(b, hi)]) - us(c[(b, lo)]))
            errs.append(abs(pred - ms * 1000.0) / (ms * 1000.0))
    return errs, left


# ---------------------------------------------------------------- one GPU

def only_dir(path):
    try:
        subs = sorted(d for d in os.listdir(path) if os.path.isdir(os.path.join(path, d)))
    except OSError as e:
        raise InputError("%s: cannot list (%s)" % (path, e.strerror))
    if len(subs) != 1:
        raise InputError("%s: expected one NCCL version folder, found %d" % (path, len(subs)))
    return subs[0]


def reduce_gpu(shared, gpu, system, version, ar_version, device, needs, shapes, mla_heads):
    vdir = os.path.join(shared, system, "vllm", version)
    g = reduce_gemm(os.path.join(vdir, "gemm_perf.csv"))
    step_is_cached = version != "0.14.0"
    ctx, ctx_dups = read_attention(os.path.join(vdir, "context_attention_perf.csv"),
                                   False, step_is_cached)
    gen, gen_dups = read_attention(os.path.join(vdir, "generation_attention_perf.csv"),
                                   True, step_is_cached)
    keep = keep_pairs(ctx, gen, needs)
    ar, ar_dups = reduce_allreduce(os.path.join(shared, system, "vllm", ar_version,
                                                "custom_allreduce_perf.csv"))
    ncdir = os.path.join(shared, system, "nccl")
    nccl_version = only_dir(ncdir)
    nccl, nccl_dups = reduce_nccl(os.path.join(ncdir, nccl_version, "nccl_perf.csv"))
    moe, moe_dups = reduce_moe(os.path.join(vdir, "moe_perf.csv"), shapes)
    mla, mla_report, mla_dups = [], {}, []
    for phase, generation in (("context", False), ("generation", True)):
        path = os.path.join(vdir, "mla_%s_module_perf.csv" % phase)
        if not os.path.exists(path):
            continue  # 0.14.0 tables: no module table (their MLA rows time the kernel alone)
        cells, dups = read_mla_module(path, generation)
        mla += mla_module_entries(cells, mla_heads, generation)
        mla_report[phase] = mla_module_errors(cells, mla_heads)
        mla_dups.append(("mla_%s_module" % phase, dups))

    gemm_note = "gemm: m = 2^0..2^15, every n and k, dtypes %s" % ",".join(g["dtypes"])
    if g["left_out"]:
        gemm_note += " (left out, under 90%% of kept cells measured: %s)" % ",".join(
            "%s %d/%d" % ((dt,) + g["coverage"][dt]) for dt in g["left_out"])
    nshapes = len({(e["hidden"], e["inter"], e["topk"], e["experts"]) for e in moe})
    reduction = ("%s; attention: %d (head_dim, window, heads, kv_heads) kept = the catalog "
                 "models' per-rank heads at TP 1,2,4,8 (else the measured neighbours) at full "
                 "attention and their sliding window, plus heads 1,8,32,64 x kv 1,8 at full "
                 "attention; both kv dtypes, every batch and length; allreduce: all; nccl: half; "
                 "moe: %d catalog shapes, tp*ep<=8, power_law_1.01 (balanced where no power-law row); repeated keys: "
                 "first row" % (gemm_note, len(keep), nshapes))
    if mla:
        reduction += ("; mla_module: DeepSeek-V3's attention block at heads %s (the catalog's "
                      "per-rank heads at TP 1,2,4,8), bf16 prefill queries, every gemm type, kv "
                      "dtype, batch and length" % ",".join(str(h) for h in sorted(mla_heads)))
    gemm = {"m": GEMM_M, "n": g["n"], "k": g["k"],
            "dtypes": {dt: [[[us(t) for t in col] for col in plane] for plane in grid]
                       for dt, grid in g["dtypes"].items()},
            "filled": g["filled"]}
    profile = [
        ("gpu", gpu), ("system", system), ("device", device), ("source", SOURCE),
        ("vllm_version", version), ("allreduce_vllm_version", ar_version),
        ("nccl_version", nccl_version), ("units", "us"), ("reduction", reduction),
        ("gemm", gemm),
        ("context_attention", attention_entries(ctx, keep, "isl")),
        ("generation_attention", attention_entries(gen, keep, "kv_len")),
        ("allreduce", ar), ("nccl", nccl), ("moe", moe),
    ]
    if mla:
        profile.append(("mla_module", mla))
    report = {"gemm": gemm_errors(g), "gemm_cov": g["coverage"], "gemm_left": g["left_out"],
              "ctx": attention_errors(ctx, keep, False),
              "gen": attention_errors(gen, keep, True),
              "dups": [("gemm", g["dups"]), ("context_attention", ctx_dups),
                       ("generation_attention", gen_dups), ("allreduce", ar_dups),
                       ("nccl", nccl_dups), ("moe", moe_dups)] + mla_dups,
              "mla": mla_report}
    return profile, report


# ---------------------------------------------------------------- output

def dumps(v):
    return json.dumps(v, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def render(profile):
    """Compact JSON: one scalar key, one GEMM n-plane or one table entry per line."""
    lines = ["{"]
    for i, (key, val) in enumerate(profile):
        tail = "," if i + 1 < len(profile) else ""
        if key == "gemm":
            lines.append('"gemm":{"m":%s,"n":%s,"k":%s,' % (dumps(val["m"]), dumps(val["n"]),
                                                             dumps(val["k"])))
            lines.append('"dtypes":{')
            dts = list(val["dtypes"])
            for j, dt in enumerate(dts):
                lines.append("%s:[" % dumps(dt))
                planes = val["dtypes"][dt]
                for p, plane in enumerate(planes):
                    lines.append(dumps(plane) + ("," if p + 1 < len(planes) else ""))
                lines.append("]" + ("," if j + 1 < len(dts) else ""))
            lines.append("},")
            lines.append('"filled":%s}%s' % (dumps(val["filled"]), tail))
        elif isinstance(val, list):
            lines.append("%s:[" % dumps(key))
            for j, e in enumerate(val):
                lines.append(dumps(e) + ("," if j + 1 < len(val) else ""))
            lines.append("]" + tail)
        else:
            lines.append("%s:%s%s" % (dumps(key), dumps(val), tail))
    lines.append("}")
    return "\n".join(lines) + "\n"


def stats(errs):
    if not errs:
        return "0 | - | - | -"
    e = sorted(errs)
    n = len(e)
    med = e[n // 2] if n % 2 else (e[n // 2 - 1] + e[n // 2]) / 2
    p95 = e[max(0, math.ceil(0.95 * n) - 1)]
    return "%d | %.2f%% | %.2f%% | %.1f%%" % (n, 100 * med, 100 * p95, 100 * e[-1])


def print_report(reports):
    print("| GPU | table | left-out rows | median | p95 | max | not predictable |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for gpu, r in reports:
        print("| %s | gemm (m not a power of two) | %s | 0 |" % (gpu, stats(r["gemm"])))
        for name, key in (("context", "ctx"), ("generation", "gen")):
            for full, label in ((True, "full"), (False, "sliding window")):
                errs, missed = r[key][full]
                print("| %s | %s attention, %s (other heads) | %s | %d |"
                      % (gpu, name, label, stats(errs), missed))
    print()
    print("MLA module tables: every kept cell inside the length grid predicted from its two "
          "neighbours (linear, twice the grid's spacing):")
    print()
    print("| GPU | table | cells | median | p95 | max | rows left out |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for gpu, r in reports:
        for phase in ("context", "generation"):
            if phase in r["mla"]:
                errs, left = r["mla"][phase]
                print("| %s | mla %s module | %s | %d |" % (gpu, phase, stats(errs), left))
    print()
    for gpu, r in reports:
        cov = ", ".join("%s %d/%d%s" % (dt, c, t, " (left out)" if dt in r["gemm_left"] else "")
                        for dt, (c, t) in r["gemm_cov"].items())
        print("%s: gemm kept cells measured: %s" % (gpu, cov))
    for gpu, r in reports:
        d = ["%s %d (%d identical)" % (t, x.count, x.identical) for t, x in r["dups"] if x.count]
        print("%s: repeated keys, first row kept: %s" % (gpu, "; ".join(d) if d else "none"))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.path.join(root, "..", "shared", "kernels"),
                    help="the kernel tables folder (default: ../shared/kernels of the repo)")
    ap.add_argument("--out", default=os.path.join(root, "configs", "kernels"),
                    help="where to write <gpu>.json (default: configs/kernels)")
    ap.add_argument("--report", action="store_true",
                    help="print the reduction's error on the rows it left out")
    args = ap.parse_args()
    if not os.path.isdir(args.shared):
        fail("%s: no such folder (the measured kernel tables)" % args.shared)
    try:
        models = load_models(os.path.join(root, "configs", "models"))
        needs, shapes = attention_needs(models), moe_shapes(models)
        mla_heads = mla_module_heads(models)
        built, reports = [], []
        for gpu, system, version, ar_version, device in SYSTEMS:
            profile, report = reduce_gpu(args.shared, gpu, system, version, ar_version, device,
                                         needs, shapes, mla_heads)
            built.append((gpu, render(profile)))
            reports.append((gpu, report))
    except InputError as e:
        fail(str(e))
    # Everything is built before the first write: bad input leaves no partial output.
    try:
        os.makedirs(args.out, exist_ok=True)
        for gpu, text in built:
            path = os.path.join(args.out, gpu + ".json")
            tmp = path + ".tmp"
            with open(tmp, "w", newline="\n") as f:
                f.write(text)
            os.replace(tmp, path)
            print("%s: %d bytes" % (path, len(text.encode())))
    except OSError as e:
        fail("%s: cannot write (%s)" % (args.out, e.strerror))
    if args.report:
        print()
        print_report(reports)


if __name__ == "__main__":
    main()

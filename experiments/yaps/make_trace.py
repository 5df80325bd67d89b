"""Writes the YAPS case's flows as photonet traces and prints YAPS's own
statistics (the reference numbers of the figure files' claims).

usage: python make_trace.py            (from experiments/yaps/)

- `trace_full.csv`: every flow of `reference/full/flows.csv` (src, dst,
  bytes, start), start = YAPS's `start_us` minus YAPS's 1 s offset (the
  figure files' `reference.start_offset_us`), in whole picoseconds (YAPS
  prints 15 significant digits: 0.01 ps), as the reproduction matches them.
- `trace_quick.csv`: the first QUICK flows only: the flows YAPS itself
  generates with `num_flow: 1000` (reference/first1000, checked below).
- stdout: YAPS's slowdown (fct_us / oracle_fct_us) mean, p50 and p99
  (nearest rank) per size class (< 100 KB, >= 100 KB, all), and its data
  drops: of the full case, and of YAPS's own run of the first QUICK flows.
"""
import csv
import math
import tomllib

from photonet.reproduce.numbers import start_ps

QUICK = 1000
with open("flows10k_websearch_l50.toml", "rb") as f:
    OFFSET_US = tomllib.load(f)["reproduce"]["reference"]["start_offset_us"]


def rows(case="full"):
    with open(f"reference/{case}/flows.csv") as f:
        return list(csv.DictReader(f))


def write_trace(path, rs):
    with open(path, "w", newline="") as f:
        f.write("src,dst,bytes,start\n")
        for r in rs:
            f.write(f"{r['src']},{r['dst']},{r['bytes']},{start_ps(r['start_us'], OFFSET_US)}ps\n")


def rank(v, q):
    v = sorted(v)
    return v[max(1, math.ceil(q * len(v))) - 1]


def stats(rs):
    out = {}
    classes = {"<100KB": lambda b: b < 100_000, ">=100KB": lambda b: b >= 100_000, "all": lambda b: True}
    for name, keep in classes.items():
        x = [float(r["fct_us"]) / float(r["oracle_fct_us"]) for r in rs if keep(int(r["bytes"]))]
        out[name] = (len(x), sum(x) / len(x), rank(x, 0.5), rank(x, 0.99))
    return out, sum(int(r["data_pkt_drops"]) for r in rs)


if __name__ == "__main__":
    rs = rows()
    write_trace("trace_full.csv", rs)
    write_trace("trace_quick.csv", rs[:QUICK])
    first = rows("first1000")
    key = lambda r: (r["src"], r["dst"], r["bytes"], r["start_us"])
    assert len(first) == QUICK and [key(r) for r in first] == [key(r) for r in rs[:QUICK]], \
        "reference/first1000 is not the first flows of the full case"
    for label, sub in (("full case", rs), (f"own run of the first {QUICK} flows", first)):
        s, drops = stats(sub)
        print(f"YAPS, {label}: data drops {drops}")
        for name, (n, mean, p50, p99) in s.items():
            print(f"  {name:8} n={n:5}  mean {mean:.4f}  p50 {p50:.4f}  p99 {p99:.4f}")

#!/usr/bin/env python3
"""Time per GMRES restart cycle from bench CSVs (tutorials/bench with -restart m): grouped bars per problem and size,
one bar per solver and type set, ms per cycle = us_per_it_median * m / 1000; the reductions per cycle are printed.
Usage: plot_cycles.py -m 30 -o cycles.png run1.csv [run2.csv ...] (a row of a later file replaces the same row of an
earlier one)."""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

ap = argparse.ArgumentParser()
ap.add_argument("csv", nargs="+")
ap.add_argument("-m", type=int, default=30, help="restart (iterations per cycle)")
ap.add_argument("-o", default="cycles.png")
ap.add_argument("--title", default="")
a = ap.parse_args()

rows = {}
for f in a.csv:
    for r in csv.DictReader(open(f)):
        if r["N"] and r["us_per_it_median"]:
            rows[(r["problem"], int(r["N"]), r["solver"], r["types"])] = r
groups = sorted({(p, n) for p, n, _, _ in rows})
bars = sorted({(s, t) for _, _, s, t in rows}, key=lambda x: (x[1], x[0]))
fig, ax = plt.subplots(figsize=(2.2 + 1.6 * len(groups), 4.2))
width = 0.8 / len(bars)
for k, (s, t) in enumerate(bars):
    xs, ys = [], []
    for g, (p, n) in enumerate(groups):
        r = rows.get((p, n, s, t))
        if r:
            ms = float(r["us_per_it_median"]) * a.m / 1000.0
            red = float(r.get("reductions_per_it") or 0) * a.m
            xs.append(g + (k - (len(bars) - 1) / 2) * width)
            ys.append(ms)
            print(f"{p:11s} {n:10d} {s:13s} {t:7s} {ms:9.1f} ms/cycle {red:6.1f} reductions/cycle")
    ax.bar(xs, ys, width, label=f"{s} ({t})")
ax.set_xticks(range(len(groups)))
ax.set_xticklabels([f"{p}\n{n:.1e}" for p, n in groups])
ax.set_ylabel(f"ms per restart cycle of {a.m}")
ax.set_yscale("log")
ax.set_title(a.title)
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(a.o, dpi=110)

#!/usr/bin/env python3
"""Plots the scaling runs of tutorials/bench.c (config/device-run scaling NP ...): one CSV per GPU count.

Left: strong scaling, time per iteration at the largest N common to all runs versus the number of GPUs
(log-log, with the ideal 1/P line of each solver's one-GPU time).  Right: weak scaling, time per
iteration at the smallest N of each run (N proportional to P) versus the number of GPUs, and the
weak-scaling efficiency of each solver in the legend.

    python3 tutorials/plot_scaling.py scaling-np1.csv scaling-np2.csv scaling-np4.csv -o scaling.png
"""
import argparse
import csv
import re
import sys


def read(path):
    match = re.search(r"np(\d+)", path)
    if not match:
        sys.exit(f"plot_scaling.py: {path}: the file name must contain npP (P = number of GPUs)")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["N"] and r["us_per_it_median"]]
    if not rows:
        sys.exit(f"plot_scaling.py: {path} holds no solver rows")
    return int(match.group(1)), rows


def main():
    parser = argparse.ArgumentParser(description="Strong and weak scaling plot from bench CSVs, one per GPU count")
    parser.add_argument("csv", nargs="+", help="CSV files whose names contain npP")
    parser.add_argument("-o", "--output", default="scaling.png", help="PNG file (default: scaling.png)")
    parser.add_argument("--weak", type=float, default=0, help="weak scaling at N = P x WEAK rows (the closest size of each run); default: the smallest N of each run")
    parser.add_argument("--dpi", type=int, default=110, help="resolution of the PNG (default: 110)")
    parser.add_argument("--solvers", default="", help="comma-separated solver names to plot (default: all)")
    args = parser.parse_args()
    runs = sorted(read(p) for p in args.csv)
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_scaling.py needs matplotlib: python3 -m pip install matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nps = [p for p, _ in runs]
    strong_n = max(set.intersection(*(set(int(r["N"]) for r in rows) for _, rows in runs)))
    series = sorted({(r["solver"], r["types"]) for _, rows in runs for r in rows if not args.solvers or r["solver"] in args.solvers.split(",")})
    fig, (ax_s, ax_w) = plt.subplots(1, 2, figsize=(13, 5))
    for solver, types in series:
        label = f"{solver} ({types})"
        style = "-" if types == "fused" else ":"
        strong, weak = [], []
        for p, rows in runs:
            mine = [r for r in rows if r["solver"] == solver and r["types"] == types]
            s = [float(r["us_per_it_median"]) for r in mine if int(r["N"]) == strong_n]
            w = sorted(mine, key=lambda r: abs(int(r["N"]) - p * args.weak) if args.weak else int(r["N"]))
            strong.append(s[0] if s else float("nan"))
            weak.append(float(w[0]["us_per_it_median"]) if w else float("nan"))
        line = ax_s.loglog(nps, strong, style, marker="o", label=label)[0]
        ax_s.loglog(nps, [strong[0] / p for p in nps], "--", color=line.get_color(), linewidth=0.7)
        eff = weak[0] / weak[-1] if weak[-1] == weak[-1] else float("nan")
        ax_w.semilogx(nps, weak, style, marker="o", color=line.get_color(), label=f"{label}: {100 * eff:.0f}% at {nps[-1]} GPUs")
    ax_s.set_title(f"strong scaling, 2D Poisson N = {strong_n:.3g} (dashed: ideal)")
    ax_w.set_title(f"weak scaling, about {args.weak:.3g} rows per GPU" if args.weak else "weak scaling, the smallest N of each run")
    for ax in (ax_s, ax_w):
        ax.set_xlabel("GPUs (one MPI rank each)")
        ax.set_ylabel("time per iteration (us)")
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xticks(nps)
        ax.set_xticklabels([str(p) for p in nps])
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.output, dpi=args.dpi)
    print(f"plot_scaling.py: wrote {args.output}")


if __name__ == "__main__":
    main()

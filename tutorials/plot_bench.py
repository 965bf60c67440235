#!/usr/bin/env python3
"""Plots the CSV of tutorials/bench.c: time per iteration versus number of unknowns, log-log.

One panel per problem (and preconditioner, when the CSV has several), one line per solver and type set (fused types solid, PETSc's native CUDA
types dotted), and the device floor of the run (two empty kernels + one small device->host copy +
synchronization, the CSV row with solver "floor") as a dashed horizontal line.  Seed 000, Fig. 4.
With --solve-time (runs of bench -rtol): the solve time of each row instead, one panel per problem
and preconditioner (the CSV's pc column), no floor.

    python3 tutorials/plot_bench.py bench.csv -o bench.png
    python3 tutorials/plot_bench.py bench-pc.csv --solve-time -o bench-pc.png
"""
import argparse
import csv
import math
import sys
from collections import defaultdict

SOLVER_ORDER = ["fusedcg", "fusedcg-k30", "fusedcg-k30-steps", "fusedcg-k30-nograph", "fusedcg-k16", "cg", "pipecg", "fusedbcgs", "fusedbcgs-k30", "fusedbcgs-k30-steps", "bcgs", "pipebcgs", "fusedsgmres", "fusedsgmres-k30", "fusedsgmres-k30-steps", "gmres"]
LINESTYLES = {"fused": "-", "native": ":"}


def read_csv(path):
    """Returns (rows of the solver runs, (floor, graph floor) medians in us or None, title)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"plot_bench.py: cannot read {path}: {e.strerror}")
    need = {"date", "gpu", "problem", "N", "solver", "types", "us_per_it_median"}
    if not rows or not need.issubset(rows[0].keys()):
        sys.exit(f"plot_bench.py: {path} is not a CSV of tutorials/bench.c (columns {', '.join(sorted(need))} expected)")
    floor = next((float(r["us_per_it_median"]) for r in rows if r["solver"] == "floor"), None)
    graph_floor = next((float(r["us_per_it_median"]) for r in rows if r["solver"] == "graphfloor"), None)
    runs = [r for r in rows if r["solver"] not in ("floor", "bandwidth", "graphfloor")]
    if not runs:
        sys.exit(f"plot_bench.py: {path} holds no solver rows")
    title = f"FusedKSP benchmark, GPU: {rows[0]['gpu']}, {rows[0]['date']}"
    return runs, (floor, graph_floor), title


def plot(runs, floors, title, output, solve_time=False, dpi=120, by="types"):
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot_bench.py needs matplotlib, which is not installed: python3 -m pip install matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    several_pcs = len({r.get("pc") or "none" for r in runs}) > 1

    def panel(r):
        return f"{r['problem']}, PC {r.get('pc') or 'none'}" if solve_time or several_pcs else r["problem"]

    def value(r):
        return float(r["solve_s"]) * 1e3 if solve_time else float(r["us_per_it_median"])

    if solve_time:
        runs = [r for r in runs if r.get("solve_s")]
        floors = (None, None)
        if not runs:
            sys.exit("plot_bench.py: --solve-time needs the solve_s column of bench -rtol runs")
    problems = list(dict.fromkeys(panel(r) for r in runs))
    ncols = min(2, len(problems))
    nrows = math.ceil(len(problems) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(6.5 * ncols, 4.8 * nrows), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    solvers = sorted({r["solver"] for r in runs}, key=lambda s: (SOLVER_ORDER.index(s) if s in SOLVER_ORDER else len(SOLVER_ORDER), s))
    color = {s: colors[k % len(colors)] for k, s in enumerate(solvers)}

    for ax, problem in zip(axes.flat, problems):
        lines = defaultdict(dict)  # (solver, series) -> {N: the smallest value of the rows of that N}
        for r in runs:
            if panel(r) == problem:
                points, N = lines[(r["solver"], r[by])], int(r["N"])
                points[N] = min(points.get(N, math.inf), value(r))
        series = list(dict.fromkeys(k[1] for k in sorted(lines)))
        for (solver, kind), points in sorted(lines.items(), key=lambda kv: (solvers.index(kv[0][0]), kv[0][1])):
            style = LINESTYLES.get(kind, "--") if by == "types" else ["-", "--", ":", "-."][series.index(kind) % 4]
            Ns = sorted(points)
            ax.plot(Ns, [points[N] for N in Ns], style, marker="o", markersize=3, color=color[solver], label=f"{solver} ({kind})")
        floor, graph_floor = floors
        if floor is not None:
            ax.axhline(floor, linestyle="--", color="black", linewidth=1, label=f"floor {floor:.1f} us")
        if graph_floor is not None:
            ax.axhline(graph_floor, linestyle="-.", color="gray", linewidth=1, label=f"graph floor {graph_floor:.1f} us")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(problem)
        ax.set_xlabel("unknowns N")
        ax.set_ylabel("solve time (ms)" if solve_time else "time per iteration (us)")
        ax.grid(True, which="both", linewidth=0.3)
        ax.legend(fontsize=7)
    for ax in axes.flat[len(problems):]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(output, dpi=dpi)
    print(f"plot_bench.py: wrote {output}")


def main():
    parser = argparse.ArgumentParser(description="Plot time per iteration versus N from the CSV of tutorials/bench.c")
    parser.add_argument("csv", nargs="?", default="bench.csv", help="CSV written by bench (default: bench.csv)")
    parser.add_argument("-o", "--output", help="PNG file (default: the CSV name with .png)")
    parser.add_argument("-t", "--title", help="title of the figure (default: the GPU and date of the CSV's first row)")
    parser.add_argument("--solve-time", action="store_true", help="plot the solve time of each row (bench -rtol), one panel per problem and PC")
    parser.add_argument("--dpi", type=int, default=120, help="resolution of the PNG (default 120)")
    parser.add_argument("--by", default="types", help="the CSV column whose values make a solver's lines (default types; e.g. backend): where rows repeat a line's N, the smallest value")
    args = parser.parse_args()
    output = args.output or (args.csv[:-4] if args.csv.endswith(".csv") else args.csv) + ".png"
    runs, floors, title = read_csv(args.csv)
    if runs and args.by not in runs[0]:
        sys.exit(f"plot_bench.py: {args.csv} has no column {args.by}")
    plot(runs, floors, args.title or title, output, args.solve_time, args.dpi, args.by)


if __name__ == "__main__":
    main()

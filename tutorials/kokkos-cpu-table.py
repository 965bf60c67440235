#!/usr/bin/env python3
"""Speedup table of tutorials/kokkos-cpu-bench.sh's CSV: for each PC, size and solver pair, the time per
iteration of PETSc's classical solver on P ranks (petsc-Px1) over that of the better fused configuration on the
kokkos backend (1 rank x P threads or P ranks x 1 thread), the same for the better of PETSc's 1 and P ranks, and
PETSc on P ranks over the host backend's better configuration.  With --plot, also a figure: per PC, the time per
iteration against N (PETSc on P ranks dotted, the better kokkos configuration solid, the better host one dashed)
and below it the speedup PETSc Px1 / best kokkos, with issue 23's targets (1.3x at N >= 1e6, 1x from 1.6e4).
  tutorials/kokkos-cpu-table.py FILE.csv[,LATER.csv...] [P=2] [--plot OUT.png]   (rows of later files replace earlier ones)"""
import argparse
import csv

PAIRS = [("fusedcg", "cg"), ("fusedbcgs", "bcgs"), ("fusedsgmres", "gmres")]
PCS = ("jacobi", "none")


def load(files):
    rows = [r for f in files.split(",") for r in csv.DictReader(open(f))]
    return {(r["config"], r["pc"], int(r["N"]), r["solver"]): float(r["us_per_it_median"]) for r in rows}


def series(t, P, pc, N, fused, classical):
    """The times of one row: PETSc 1x1, PETSc Px1, kokkos 1xP, kokkos Px1, host 1x1, host Px1 (None where not run)"""
    g = lambda c, s: t.get((c, pc, N, s))
    return [g("petsc-1x1", classical), g(f"petsc-{P}x1", classical), g(f"kokkos-1x{P}", fused), g(f"kokkos-{P}x1", fused), g("host-1x1", fused), g(f"host-{P}x1", fused)]


def best(vals):
    vals = [v for v in vals if v is not None]
    return min(vals) if vals else None


def table(t, P):
    print(f"| PC | N | solver | PETSc 1x1 | PETSc {P}x1 | kokkos 1x{P} | kokkos {P}x1 | host 1x1 | host {P}x1 | PETSc {P}x1 / best kokkos | best PETSc / best kokkos | PETSc {P}x1 / best host |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    fmt = lambda v: "-" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.1f}"
    ratio = lambda a, b: f"{a / b:.2f}" if a and b else "-"
    for pc in PCS:
        for N in sorted({k[2] for k in t if k[1] == pc}):
            for fused, classical in PAIRS:
                vals = series(t, P, pc, N, fused, classical)
                kk, hh, pp = best(vals[2:4]), best(vals[4:6]), best(vals[0:2])
                print(f"| {pc} | {N} | {fused}/{classical} | " + " | ".join(fmt(v) for v in vals) + f" | {ratio(vals[1], kk)} | {ratio(pp, kk)} | {ratio(vals[1], hh)} |")


def plot(t, P, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pcs = [pc for pc in PCS if any(k[1] == pc for k in t)]
    fig, axes = plt.subplots(2, len(pcs), figsize=(6 * len(pcs), 8), sharex=True, squeeze=False)
    colors = {"fusedcg": "tab:blue", "fusedbcgs": "tab:orange", "fusedsgmres": "tab:green"}
    for col, pc in enumerate(pcs):
        top, bottom = axes[0][col], axes[1][col]
        Ns = sorted({k[2] for k in t if k[1] == pc})
        for fused, classical in PAIRS:
            rows = [(N, series(t, P, pc, N, fused, classical)) for N in Ns]
            c = colors[fused]
            for label, pick, style in ((f"PETSc {classical} {P}x1", lambda v: v[1], ":"), (f"{fused} kokkos (better of 1x{P}, {P}x1)", lambda v: best(v[2:4]), "-"), (f"{fused} host (better of 1x1, {P}x1)", lambda v: best(v[4:6]), "--")):
                pts = [(N, pick(v)) for N, v in rows if pick(v)]
                if pts:
                    top.plot(*zip(*pts), style, color=c, marker="o", ms=3, label=label)
            pts = [(N, v[1] / best(v[2:4])) for N, v in rows if v[1] and best(v[2:4])]
            if pts:
                bottom.plot(*zip(*pts), "-", color=c, marker="o", ms=3, label=f"{classical} {P}x1 / {fused} kokkos")
        top.set_xscale("log")
        top.set_yscale("log")
        top.set_ylabel("µs per iteration")
        top.set_title(f"2D Poisson, PC {pc}")
        top.grid(True, which="both", alpha=0.3)
        top.legend(fontsize=7)
        bottom.axhline(1.0, color="gray", lw=1)
        bottom.axhline(1.3, color="gray", lw=1, ls="--")
        bottom.axvline(1e6, color="gray", lw=0.5, ls=":")
        bottom.set_xscale("log")
        bottom.set_xlabel("unknowns N")
        bottom.set_ylabel(f"PETSc {P} ranks / best fused (kokkos)")
        bottom.grid(True, which="both", alpha=0.3)
        bottom.legend(fontsize=7)
    fig.suptitle(f"Fused solvers on the kokkos backend (OpenMP) against PETSc's classical solvers, {P} CPU cores")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", help="CSV files of kokkos-cpu-bench.sh, comma separated")
    ap.add_argument("P", nargs="?", default="2", help="the ranks / threads of the runs (2)")
    ap.add_argument("--plot", metavar="OUT.png", help="also write the figure")
    a = ap.parse_args()
    t = load(a.files)
    table(t, a.P)
    if a.plot:
        plot(t, a.P, a.plot)


if __name__ == "__main__":
    main()

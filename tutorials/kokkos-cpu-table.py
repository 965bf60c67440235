#!/usr/bin/env python3
"""Speedup table of tutorials/kokkos-cpu-bench.sh's CSV: for each PC, size and solver pair, the time per
iteration of PETSc's classical solver on P ranks (petsc-Px1) over that of the better fused configuration on the
kokkos backend (1 rank x P threads or P ranks x 1 thread), the same for the better of PETSc's 1 and P ranks, and
PETSc on P ranks over the host backend's better configuration.
  tutorials/kokkos-cpu-table.py FILE.csv[,LATER.csv...] [P=2]   (rows of later files replace earlier ones)"""
import csv
import sys

rows = [r for f in sys.argv[1].split(",") for r in csv.DictReader(open(f))]
P = sys.argv[2] if len(sys.argv) > 2 else "2"
t = {(r["config"], r["pc"], int(r["N"]), r["solver"]): float(r["us_per_it_median"]) for r in rows}
pairs = [("fusedcg", "cg"), ("fusedbcgs", "bcgs"), ("fusedsgmres", "gmres")]
print(f"| PC | N | solver | PETSc 1x1 | PETSc {P}x1 | kokkos 1x{P} | kokkos {P}x1 | host 1x1 | host {P}x1 | PETSc {P}x1 / best kokkos | best PETSc / best kokkos | PETSc {P}x1 / best host |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for pc in ("jacobi", "none"):
    for N in sorted({k[2] for k in t if k[1] == pc}):
        for fused, classical in pairs:
            g = lambda c, s: t.get((c, pc, N, s))
            vals = [g("petsc-1x1", classical), g(f"petsc-{P}x1", classical), g(f"kokkos-1x{P}", fused), g(f"kokkos-{P}x1", fused), g("host-1x1", fused), g(f"host-{P}x1", fused)]
            fmt = lambda v: "-" if v is None else f"{v:.0f}" if v >= 100 else f"{v:.1f}"
            kk = [v for v in vals[2:4] if v is not None]
            hh = [v for v in vals[4:6] if v is not None]
            ref = vals[1]
            rk = f"{ref / min(kk):.2f}" if ref and kk else "-"
            rh = f"{ref / min(hh):.2f}" if ref and hh else "-"
            pp = [v for v in vals[0:2] if v is not None]
            rb = f"{min(pp) / min(kk):.2f}" if pp and kk else "-"
            print(f"| {pc} | {N} | {fused}/{classical} | " + " | ".join(fmt(v) for v in vals) + f" | {rk} | {rb} | {rh} |")

#!/usr/bin/env bash
# The CPU benchmark of the kokkos backend (tutorials/results/RESULTS.md, "Kokkos backend on CPU cores"): 2D Poisson,
# PC jacobi and none, fused solvers on the kokkos backend (1 rank x P threads, P ranks x 1 thread) and on the host
# backend (1 and P ranks), PETSc's classical cg/bcgs/gmres on PETSc's own types (-types petsc) on 1 and P ranks.
# One CSV: the bench columns plus the configuration (ranks x threads, backend).
#   [PCS="jacobi none"] tutorials/kokkos-cpu-bench.sh OUT.csv [P=2] [SIZES=1e4,1.6e4,6.5e4,2.6e5,1e6,4e6]
set -u -o pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: kokkos-cpu-bench.sh OUT.csv [P] [SIZES]}
P=${2:-2}
sizes=${3:-1e4,1.6e4,6.5e4,2.6e5,1e6,4e6}
mpiexec=${MPIEXEC:-mpiexec.mpich}
bench=$root/build/bin/bench
tmp=$(mktemp -d)
fused=fusedcg,fusedbcgs,fusedsgmres
classical=cg,bcgs,gmres
common=(-problems poisson2d -sizes "$sizes" -reps 7 -row_time 10)
: > "$out"
run() { # config np solvers types pc backend-options...
  local config=$1 np=$2 solvers=$3 types=$4 pc=$5
  shift 5
  echo "# $config pc=$pc: $mpiexec -n $np $bench ${common[*]} -solvers $solvers -types $types -pc_type $pc $*"
  "$mpiexec" -n "$np" "$bench" "${common[@]}" -solvers "$solvers" -types "$types" -pc_type "$pc" -csv "$tmp/run.csv" "$@" | grep -v '^#'
  if [[ ! -s $out ]]; then head -n 1 "$tmp/run.csv" | sed 's/$/,config,pc/' > "$out"; fi
  tail -n +2 "$tmp/run.csv" | grep -v '^#' | grep ',poisson2d,' | sed "s/\$/,$config,$pc/" >> "$out"
}
for pc in ${PCS:-jacobi none}; do
  run "kokkos-1x$P" 1 "$fused" fused "$pc" -fused_backend kokkos -fused_kokkos_threads "$P"
  run "kokkos-${P}x1" "$P" "$fused" fused "$pc" -fused_backend kokkos -fused_kokkos_threads 1
  run "host-1x1" 1 "$fused" fused "$pc" -fused_backend host
  run "host-${P}x1" "$P" "$fused" fused "$pc" -fused_backend host
  run "petsc-1x1" 1 "$classical" petsc "$pc" -fused_backend host
  run "petsc-${P}x1" "$P" "$classical" petsc "$pc" -fused_backend host
done
rm -rf "$tmp"

#!/usr/bin/env bash
# Lints all RTL with `verilator --lint-only -Wall`, once per top module. Any warning fails (exit 1).
# Waivers live in rtl/lint_waivers.vlt, each with a comment saying why.
# Usage: scripts/lint-rtl.sh [repo-root]; VERILATOR=/path/to/bin/verilator lints with another Verilator (default: the
# one on PATH; scripts/check-verilator sets it).
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
verilator="${VERILATOR:-verilator}"
echo "lint: $("$verilator" --version)"

# Each top is linted on the folders it is built from (packages first), so that a package of another block does not
# show parameters this top leaves unused (Verilator 5.050 reports UNUSEDPARAM in packages; 5.006 does not).
status=0
lint_top() {  # lint_top TOP FOLDER...
  local top="$1"
  shift
  local pkgs srcs
  pkgs=$(find "$@" -name '*_pkg.sv' | sort)
  srcs=$(find "$@" -name '*.sv' ! -name '*_pkg.sv' | sort)
  # shellcheck disable=SC2086
  if out=$("$verilator" --lint-only -Wall --assert rtl/lint_waivers.vlt $pkgs $srcs --top-module "$top" 2>&1); then
    echo "lint: $top clean"
  else
    echo "lint: $top has warnings or errors:"
    echo "$out" | grep -E '^%(Warning|Error)' | head -n 40
    status=1
  fi
}
lint_top trn_fp_units rtl/fp rtl/prim
lint_top trn_te rtl/fp rtl/prim rtl/te

# NeuronLink (rtl/noc/) imports no other block's package: its router is linted on its own folder and the shared
# primitives (rtl/prim/; the other packages would show parameters it does not use), once per parameter set that
# rtl/noc/trn_noc.cmake verilates.
noc_srcs=$(find rtl/noc -name '*_pkg.sv' | sort; find rtl/noc rtl/prim -name '*.sv' ! -name '*_pkg.sv' | sort)
for params in "" "-GNUM_VC=4" "-GNDIM=3 -GNUM_VC=4 -GVC_GROUPS=2" "-GNUM_VC=4 -GDEPTH=8"; do
  # shellcheck disable=SC2086
  if out=$("$verilator" --lint-only -Wall --assert rtl/lint_waivers.vlt rtl/noc/trn_noc_lint.vlt $noc_srcs \
           --top-module trn_noc_router $params 2>&1); then
    echo "lint: trn_noc_router${params:+ $params} clean"
  else
    echo "lint: trn_noc_router${params:+ $params} has warnings or errors:"
    echo "$out" | grep -E '^%(Warning|Error)' | head -n 40
    status=1
  fi
done
exit $status

#!/usr/bin/env bash
# Lints all RTL with `verilator --lint-only -Wall`, once per top module. Any warning fails (exit 1).
# Waivers live in rtl/lint_waivers.vlt, each with a comment saying why.
# Usage: scripts/lint-rtl.sh [repo-root]
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"

tops=(trn_fp_units trn_te)
pkgs=$(find rtl -name '*_pkg.sv' | sort)
srcs=$(find rtl -name '*.sv' ! -name '*_pkg.sv' | sort)

status=0
for top in "${tops[@]}"; do
  # shellcheck disable=SC2086
  if out=$(verilator --lint-only -Wall --assert rtl/lint_waivers.vlt $pkgs $srcs --top-module "$top" 2>&1); then
    echo "lint: $top clean"
  else
    echo "lint: $top has warnings or errors:"
    echo "$out" | grep -E '^%(Warning|Error)' | head -n 40
    status=1
  fi
done

# NeuronLink (rtl/noc/) imports no other block's package: its router is linted on its own folder and the shared
# primitives (rtl/prim/; the other packages would show parameters it does not use), once per parameter set that
# rtl/noc/trn_noc.cmake verilates.
noc_srcs=$(find rtl/noc -name '*_pkg.sv' | sort; find rtl/noc rtl/prim -name '*.sv' ! -name '*_pkg.sv' | sort)
for params in "" "-GNUM_VC=4" "-GNDIM=3 -GNUM_VC=4 -GVC_GROUPS=2" "-GNUM_VC=4 -GDEPTH=8"; do
  # shellcheck disable=SC2086
  if out=$(verilator --lint-only -Wall --assert rtl/lint_waivers.vlt rtl/noc/trn_noc_lint.vlt $noc_srcs \
           --top-module trn_noc_router $params 2>&1); then
    echo "lint: trn_noc_router${params:+ $params} clean"
  else
    echo "lint: trn_noc_router${params:+ $params} has warnings or errors:"
    echo "$out" | grep -E '^%(Warning|Error)' | head -n 40
    status=1
  fi
done
exit $status

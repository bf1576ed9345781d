#!/usr/bin/env bash
# Installs, from Debian 12, every package trnsim needs to build, test and benchmark.
# Quick when everything is present: only missing packages are passed to apt-get.
set -euo pipefail

packages=(
  # toolchain
  g++ make cmake ninja-build pkg-config ccache
  # libFuzzer (tests/fuzz, make fuzz): clang and its runtime libraries
  clang libclang-rt-dev
  # RTL simulation and waveforms
  verilator iverilog gtkwave xvfb xauth
  # RTL coverage HTML (make coverage: genhtml); PNG decoding for the headless waveform render test (convert)
  lcov imagemagick
  # libraries
  libsystemc-dev libfmt-dev googletest libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev libxtensor-dev xtl-dev libopenblas-dev
  # multi-chip systems split over processes (mpirun / srun: docs/distributed.md)
  libopenmpi-dev openmpi-bin
  # benchmarks (build time / peak memory; gnuplot draws the NeuronLink latency-throughput plot of scripts/noc-sweep)
  time gnuplot-nox
  # the QEMU guest of the PCI function (docs/linux-driver.md): the emulator, Debian's kernel and its headers (the
  # module is built against them), busybox and cpio for the initramfs
  qemu-system-x86 linux-image-amd64 linux-headers-amd64 busybox-static cpio
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "deps: installing missing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"

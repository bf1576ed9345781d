#!/usr/bin/env bash
# Builds a guest initramfs (gzip'ed newc cpio) around Debian's static busybox: make-initramfs.sh OUT.gz INIT [FILE...]
# INIT becomes /init (run by the kernel as PID 1); every FILE is copied to / under its base name, a dynamically linked
# program with the shared libraries ldd names (at their paths). Needs busybox-static, cpio and gzip
# (scripts/install-deps.sh installs them).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OUT.gz INIT [FILE...]" >&2
  exit 2
fi
out=$1
init=$2
shift 2
busybox=/bin/busybox
for tool in cpio gzip; do
  command -v "$tool" > /dev/null || { echo "make-initramfs: $tool is missing (make deps)" >&2; exit 2; }
done
# (grep without -q reads the whole list: with -q it may exit first and, under pipefail, busybox's SIGPIPE fails this)
[ -x "$busybox" ] && "$busybox" --list | grep -x devmem > /dev/null || {
  echo "make-initramfs: $busybox (Debian's busybox-static, with devmem) is missing (make deps)" >&2
  exit 2
}
[ -r "$init" ] || { echo "make-initramfs: INIT $init is not readable" >&2; exit 2; }
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/bin "$root"/proc "$root"/sys "$root"/dev "$root"/tmp
cp "$busybox" "$root"/bin/busybox
cp "$init" "$root"/init
chmod 755 "$root"/init
for f in "$@"; do
  [ -r "$f" ] || { echo "make-initramfs: FILE $f is not readable" >&2; exit 2; }
  cp "$f" "$root/$(basename "$f")"
  # A dynamically linked program brings its shared libraries (the host's Debian userland), at the same paths.
  if [ -x "$f" ] && ldd "$f" > /dev/null 2>&1; then
    for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  fi
done
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -9 > "$out"

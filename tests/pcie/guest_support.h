// What the QEMU guest tests (label qemu) share: the Debian packages a guest needs, and the initramfs built with
// firmware/linux/make-initramfs.sh (the script docs/linux-driver.md tells users to run).
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace trnsim::test {

/// The Debian packages a guest needs that are not installed (" qemu-system-x86 cpio"), or "" when all are.
inline std::string missing_guest_packages() {
  std::string missing;
  if (std::system("command -v qemu-system-x86_64 > /dev/null 2>&1") != 0) missing += " qemu-system-x86";
  if (std::system("ls /boot/vmlinuz-* > /dev/null 2>&1") != 0) missing += " linux-image-amd64";
  if (::access("/bin/busybox", X_OK) != 0) missing += " busybox-static";
  if (std::system("command -v cpio > /dev/null 2>&1") != 0) missing += " cpio";
  return missing;
}

/// Builds `initrd` around the /init `init` (a path below the source tree, e.g. "firmware/linux/smoke/init") with
/// `files` copied to /; the command that ran, empty when it succeeded.
inline std::string make_initramfs(const std::string& source_dir, const std::string& initrd, const std::string& init,
                                  const std::vector<std::string>& files) {
  std::string cmd = "'" + source_dir + "/firmware/linux/make-initramfs.sh' '" + initrd + "' '" + source_dir + "/" +
                    init + "'";
  for (const std::string& f : files) cmd += " '" + f + "'";
  return std::system(cmd.c_str()) == 0 ? std::string() : cmd;
}

}  // namespace trnsim::test

#!/bin/bash
# run-udev-case.sh CASE.sh STAGE [WORKDIR]: the harness's run-case.sh with Debian's systemd-udevd,
# udevadm, the stock rules that make by-uuid links, and the staged (cmake --install DESTDIR) rules
# and helper added to the guest.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
stage=$(realpath "$2")
helper=$(find "$stage" -name btrfs-scan-gate -type f -perm -u+x -path '*bin/*' | head -n 1)
[ -n "$helper" ] || { echo "run-udev-case: no helper under $stage" >&2; exit 77; }
files="$stage/etc/udev/rules.d/64-btrfs.rules:/etc/udev/rules.d/64-btrfs.rules"
for r in 50-udev-default.rules 60-persistent-storage.rules; do
    files="$files /lib/udev/rules.d/$r:/lib/udev/rules.d/$r"
done
for b in ata_id scsi_id; do [ -e /lib/udev/$b ] && files="$files /lib/udev/$b:/lib/udev/$b"; done
export QEMU_EXTRA_BINS="/lib/systemd/systemd-udevd $(command -v udevadm) $helper"
export QEMU_EXTRA_FILES="$files /lib/systemd/systemd-udevd:/lib/systemd/systemd-udevd $helper:/usr/bin/btrfs-scan-gate $helper:${helper#$stage}"
exec "$here/../run-case.sh" "$1" ${3:+"$3"}

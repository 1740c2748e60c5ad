#!/bin/bash
# Syntax check and shellcheck of every templated initramfs hook, in its shell's dialect.
# Usage: shell-lint.sh CONFIGURED_UDEV_DIR
set -euo pipefail
d=$1
fail=0
# file dialect syntax-checker
while read -r f dialect check; do
    [ -f "$d/$f" ] || { echo "FAIL: $d/$f missing"; fail=1; continue; }
    if ! $check -n "$d/$f"; then echo "FAIL: $check -n $f"; fail=1; fi
    if command -v shellcheck >/dev/null; then
        if shellcheck -s "$dialect" "$d/$f"; then echo "ok: shellcheck -s $dialect $f"; else fail=1; fi
    fi
done <<'LIST'
mkinitcpio/install/btrfs-scan-gate bash bash
mkinitcpio/hooks/btrfs-scan-gate dash sh
dracut/90btrfs-scan-gate/module-setup.sh bash bash
dracut/90btrfs-scan-gate/btrfs-scan-gate-boot.sh dash sh
initramfs-tools/hooks/btrfs-scan-gate dash sh
initramfs-tools/scripts/init-top/btrfs-scan-gate dash sh
LIST
if ! command -v shellcheck >/dev/null; then
    echo "NOTE: shellcheck not installed (apt-get install shellcheck); only syntax was checked"
fi
[ "$fail" -eq 0 ] && echo PASS
exit "$fail"

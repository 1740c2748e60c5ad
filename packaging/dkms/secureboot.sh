#!/bin/bash
# secureboot.sh: may the dkms-built btrfs.ko be installed, as far as Secure Boot goes? Sourced
# through dkms.conf, which skips the build (the in-tree btrfs module stays in charge) when not.
#
# With Secure Boot on, the kernel loads only modules signed by a key it trusts. Debian's dkms signs
# what it builds with its own key (mok_certificate, default /var/lib/dkms/mok.pub), which the kernel
# trusts only once it is enrolled as a MOK (mokutil --import, then MokManager at the next boot).
# A btrfs.ko in updates/dkms takes precedence over the signed in-tree one: unenrolled, modprobe btrfs
# fails and a btrfs root does not boot. So:
#   exit 0  Secure Boot off (or no EFI), or on with dkms's key enrolled: build
#   exit 1  Secure Boot on and the key not enrolled, missing, or not checkable (no mokutil):
#           do not build; a message on stderr says why and what to do
# Test seams: BSG_EFIVARS_DIR (default /sys/firmware/efi/efivars), BSG_DKMS_FRAMEWORK_CONF
# (default /etc/dkms/framework.conf), mokutil from PATH.
efivars=${BSG_EFIVARS_DIR:-/sys/firmware/efi/efivars}
framework=${BSG_DKMS_FRAMEWORK_CONF:-/etc/dkms/framework.conf}
say() { echo "btrfs-scan-gate-dkms: $*" >&2; }

# the SecureBoot variable of the EFI global GUID: 4 bytes of attributes, then 1 (on) or 0 (off)
var=$efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
[ -e "$var" ] || exit 0 # no EFI, or no Secure Boot variable: nothing enforces signatures
state=$(od -An -t u1 -j 4 -N 1 "$var" 2>/dev/null | tr -d ' ')
[ "$state" = 1 ] || exit 0

# dkms's certificate, as dkms finds it (framework.conf and its .d directory may move it)
cert=/var/lib/dkms/mok.pub
for f in "$framework" "${framework}.d"/*.conf; do
    [ -r "$f" ] || continue
    v=$(sed -n 's/^[[:space:]]*mok_certificate=["'\'']\{0,1\}\([^"'\'']*\)["'\'']\{0,1\}[[:space:]]*$/\1/p' "$f" | tail -n 1)
    [ -z "$v" ] || cert=$v
done
hint="the patched btrfs module is not built; the signed in-tree btrfs module stays in charge (no virtual_fsid, no skip_scan: btrfs-scan-gate status exits 3). To use it: mokutil --import $cert, reboot and enroll the key in MokManager, then dkms autoinstall."
if [ ! -e "$cert" ]; then
    say "Secure Boot is on and dkms's signing certificate $cert does not exist yet (dkms makes it at its first signed build; README.Debian shows how to make it now): $hint"
    exit 1
fi
if ! command -v mokutil >/dev/null 2>&1; then
    say "Secure Boot is on and mokutil is not installed, so whether $cert is enrolled cannot be checked: $hint"
    exit 1
fi
out=$(mokutil --test-key "$cert" 2>&1 || true)
case $out in
*"already enrolled"*) exit 0 ;;
*"not enrolled"*) say "Secure Boot is on and dkms's key $cert is not enrolled: $hint" ;;
*) say "Secure Boot is on and mokutil --test-key $cert answered '$out': $hint" ;;
esac
exit 1

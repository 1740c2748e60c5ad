#!/bin/bash
# kernels.sh [--install]: which installed kernel runs the patched btrfs module and which keeps the
# in-tree one, and why. With --install (the postinst of btrfs-scan-gate-dkms), first `dkms install`
# the module for every installed 6.1 kernel that lacks it: dkms's own postinst builds only for the
# running and the newest kernel, and an upgrade of this package (prerm: dkms remove --all) would
# leave the older fallback kernels on the in-tree module without a word.
#
# An installed kernel is a directory of /lib/modules with a kernel/ tree or a /boot/vmlinuz-KVER
# (a directory that only holds the build link of linux-headers is not a kernel). The module of a
# kernel is the patched one when /lib/modules/KVER/updates/dkms/btrfs.ko exists: the same test as
# `btrfs-scan-gate status` (its `kernels:` lines). Reasons for a kernel without it: no headers, no
# source of its version (source.sh check), Secure Boot or an image build without a named signing
# key (dkms.conf says which), a failed build. No 6.1 kernel at all (trixie runs 6.12): says so.
# Prints one line per kernel on stdout; exits 0 (a kernel left on the in-tree module is reported,
# not an error for dpkg). Lives in /usr/src/btrfs-scan-gate-VERSION/ beside dkms.conf.
# Test seams: BSG_MODULES_DIR (/lib/modules), BSG_BOOT_DIR (/boot); dkms from PATH.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
modules=${BSG_MODULES_DIR:-/lib/modules}
boot=${BSG_BOOT_DIR:-/boot}
name=btrfs-scan-gate
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$here/dkms.conf")
install=0
[ "${1:-}" != --install ] || install=1

patched() { # KVER: the patched module is installed for it
    local f
    for f in "$modules/$1/updates/dkms/btrfs.ko"{,.xz,.zst,.gz}; do
        [ -e "$f" ] && return 0
    done
    return 1
}

why_not() { # KVER: one line, why it keeps the in-tree module (no build attempted)
    local k=$1 msg
    if [ ! -e "$modules/$k/build/include" ]; then
        echo "linux-headers-$k is not installed (apt-get install linux-headers-$k, then dpkg-reconfigure btrfs-scan-gate-dkms)"
    elif ! msg=$(bash "$here/source.sh" check "$k" 2>&1); then
        msg=${msg#btrfs-scan-gate-dkms: }
        echo "${msg#"kernel $k keeps the in-tree btrfs module: "}"
    elif msg=$(conf_says "$k") && [ -n "$msg" ]; then
        echo "$msg"
    else
        echo "not built (dkms install -m $name -v $ver -k $k, or dpkg-reconfigure btrfs-scan-gate-dkms)"
    fi
}

conf_says() { # KVER: dkms.conf's reason to skip KVER (Secure Boot, image build), if any
    # shellcheck disable=SC2016 # expanded by the inner bash
    kernelver=$1 kernel_source_dir=$modules/$1/build bash -c \
        '. "$1" >/dev/null; [ "$BUILD_EXCLUSIVE_KERNEL" = "^$" ] || exit 0' sh "$here/dkms.conf" 2>&1 |
        sed -n "s/^btrfs-scan-gate-dkms: kernel $1 keeps the in-tree btrfs module: //p" | head -n 1
}

declare -A reason=()
kernels=()
for d in "$modules"/*; do
    [ -d "$d" ] || continue
    k=${d##*/}
    [ -d "$d/kernel" ] || [ -e "$boot/vmlinuz-$k" ] || continue
    kernels+=("$k")
done
if [ ${#kernels[@]} -gt 0 ]; then
    mapfile -t kernels < <(printf '%s\n' "${kernels[@]}" | sort -V)
fi

if [ "$install" = 1 ]; then
    for k in "${kernels[@]}"; do
        case $k in 6.1.*) ;; *) continue ;; esac
        patched "$k" && continue
        [ -e "$modules/$k/build/include" ] || continue
        log=$(mktemp "${TMPDIR:-/tmp}/btrfs-scan-gate-dkms.XXXXXX")
        echo "btrfs-scan-gate-dkms: building the patched btrfs module for $k (dkms install)"
        rc=0
        dkms install -m "$name" -v "$ver" -k "$k" >"$log" 2>&1 || rc=$?
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
            # the build's own message (source, patch) if it gave one, else dkms's last words
            m=$(grep -h 'btrfs-scan-gate-dkms:' "$log" "/var/lib/dkms/$name/$ver/build/make.log" 2>/dev/null | tail -n 1)
            [ -n "$m" ] || m=$(grep -v '^$' "$log" | tail -n 1)
            reason[$k]="the build failed: ${m#btrfs-scan-gate-dkms: } (log: /var/lib/dkms/$name/$ver/build/make.log)"
        fi
        rm -f "$log"
    done
fi

echo "btrfs-scan-gate-dkms: installed kernels and their btrfs module:"
[ ${#kernels[@]} -gt 0 ] || echo "  (no installed kernel under $modules)"
n61=0
for k in "${kernels[@]}"; do case $k in 6.1.*) n61=$((n61 + 1)) ;; esac; done
if [ ${#kernels[@]} -gt 0 ] && [ "$n61" = 0 ]; then
    echo "  no 6.1 kernel is installed: nothing to build. Kernels 6.7 and later mount clones with temp_fsid"
    echo "  and need no patched module; this package can be removed (apt-get remove btrfs-scan-gate-dkms)."
fi
for k in "${kernels[@]}"; do
    case $k in
    6.1.*)
        if patched "$k"; then
            echo "  $k: patched (updates/dkms/btrfs.ko)"
        else
            echo "  $k: in-tree btrfs module, unpatched: ${reason[$k]:-$(why_not "$k")}"
        fi
        ;;
    *) echo "  $k: its own btrfs module (not a 6.1 kernel: the series is for 6.1; 6.7 and later mount clones with temp_fsid)" ;;
    esac
done
exit 0

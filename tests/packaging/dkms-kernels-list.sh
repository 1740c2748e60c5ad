#!/bin/bash
# dkms-kernels-list.sh: packaging/dkms/kernels.sh, what the -dkms postinst runs after dkms's own
# postinst, without building anything: a fake /lib/modules and /boot, dkms a stub on PATH that
# "installs" (writes updates/dkms/btrfs.ko) or fails as the case says, a source.sh stub beside the
# real dkms.conf (whose Secure Boot and image-build reasons the list repeats). Kernels: A patched already (dkms's postinst built it: not rebuilt); B without
# the module, headers present (--install must dkms install it: the fallback kernel an upgrade
# would leave behind); C without headers; D whose source cannot be had (source.sh check says so);
# E whose build fails (the build's own message is shown); a 6.12 kernel; a directory holding only
# a headers' build link (not a kernel). Every installed kernel gets one line saying patched or
# in-tree and why. Before issue 20 item 2 there was no such list and B stayed on the in-tree module.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dkms_dir=$here/../../packaging/dkms
work=$(mktemp -d "${TMPDIR:-/var/tmp}/dkms-kernels.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/src" "$work/bin" "$work/modules" "$work/boot" "$work/dkmslib"
cp "$dkms_dir/kernels.sh" "$dkms_dir/dkms.conf" "$work/src/"
echo x >"$work/src/linux-btrfs-6.1.192-3.tar.xz"
mkdir -p "$work/efi/efivars"
printf '\007\000\000\000\001' >"$work/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
cat >"$work/src/source.sh" <<'STUB'
#!/bin/sh
# source.sh stub: kernel D's source is not to be had
[ "$1" = check ] || exit 2
case $2 in 6.1.0-40-amd64)
    echo "btrfs-scan-gate-dkms: kernel $2 keeps the in-tree btrfs module: its source, linux-source-6.1 6.1.150-1, is not installed" >&2
    exit 1 ;;
esac
exit 0
STUB
# dkms stub: `dkms install -m N -v V -k K` logs the call; E fails as a build does, others install
cat >"$work/bin/dkms" <<'STUB'
#!/bin/sh
echo "dkms $*" >>"$DKMSLOG"
[ "$1" = install ] || exit 2
while [ $# -gt 0 ]; do [ "$1" = -k ] && k=$2; shift; done
case $k in
6.1.0-40-amd64) exit 77 ;; # dkms.conf's source check excluded it: "Skipped"
6.1.0-45-amd64)
    mkdir -p "$MAKELOGDIR"
    echo "btrfs-scan-gate-dkms: 0003-btrfs-x.patch does not apply to fs/btrfs of linux-source-6.1 6.1.160-1" >"$MAKELOGDIR/make.log"
    echo "Error! Bad return status for module build on kernel: $k (x86_64)" >&2
    exit 10 ;;
esac
mkdir -p "$MODULES/$k/updates/dkms"
: >"$MODULES/$k/updates/dkms/btrfs.ko"
STUB
chmod +x "$work/bin/dkms"
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$work/src/dkms.conf")

A=6.1.0-57-amd64 B=6.1.0-54-amd64 C=6.1.0-50-amd64 D=6.1.0-40-amd64 E=6.1.0-45-amd64 N=6.12.57+deb12-amd64
for k in $A $B $C $D $E $N; do
    mkdir -p "$work/modules/$k/kernel/fs/btrfs"
    : >"$work/modules/$k/kernel/fs/btrfs/btrfs.ko"
    : >"$work/boot/vmlinuz-$k"
    [ "$k" = "$C" ] || mkdir -p "$work/modules/$k/build/include/generated"
    [ "$k" = "$C" ] || echo '#define LINUX_PACKAGE_ID " Debian 6.1.192-3"' >"$work/modules/$k/build/include/generated/package.h"
done
mkdir -p "$work/modules/$A/updates/dkms" "$work/modules/6.1.0-53-amd64/build/include"
: >"$work/modules/$A/updates/dkms/btrfs.ko"

run() { # run LOG ARGS...: no EFI here unless EFI= names the fake one with Secure Boot on
    local log=$1
    shift
    BSG_EFI_DIR=${EFI:-$work/no-efi} BSG_SIGNING_CONF=$work/none BSG_PID1_ROOT=/ PATH=$work/bin:$PATH DKMSLOG=$work/dkms.log MODULES=$work/modules \
        MAKELOGDIR=$work/dkmslib BSG_MODULES_DIR=$work/modules BSG_BOOT_DIR=$work/boot \
        bash "$work/src/kernels.sh" "$@" >"$log" 2>&1 || fail "kernels.sh $* exited $?"
}
# the report alone builds nothing
: >"$work/dkms.log"
run "$work/report.log"
[ ! -s "$work/dkms.log" ] || fail "the report called dkms: $(cat "$work/dkms.log")"
grep -qx "  $B: in-tree btrfs module, unpatched: not built (dkms install -m btrfs-scan-gate -v $ver -k $B, or dpkg-reconfigure btrfs-scan-gate-dkms)" "$work/report.log" ||
    { cat "$work/report.log"; fail "report: B's line"; }
# the same with Secure Boot on: B's line gives dkms.conf's reason
EFI=$work/efi run "$work/report-sb.log"
grep -q "^  $B: in-tree btrfs module, unpatched: Secure Boot is on and no signing key is named" "$work/report-sb.log" ||
    { cat "$work/report-sb.log"; fail "report with Secure Boot on: B's line"; }

# --install (the postinst); the stub's make.log stands for dkms's build/make.log
sed -i "s|/var/lib/dkms/\$name/\$ver/build/make.log|$work/dkmslib/make.log|" "$work/src/kernels.sh"
: >"$work/dkms.log"
run "$work/install.log" --install
cat "$work/install.log"
expect() { grep -qxF -- "$1" "$work/install.log" || fail "no line '$1'"; }
expect "btrfs-scan-gate-dkms: installed kernels and their btrfs module:"
expect "  $A: patched (updates/dkms/btrfs.ko)"
expect "  $B: patched (updates/dkms/btrfs.ko)"
expect "  $C: in-tree btrfs module, unpatched: linux-headers-$C is not installed (apt-get install linux-headers-$C, then dpkg-reconfigure btrfs-scan-gate-dkms)"
expect "  $D: in-tree btrfs module, unpatched: its source, linux-source-6.1 6.1.150-1, is not installed"
grep -q "^  $E: in-tree btrfs module, unpatched: the build failed: 0003-btrfs-x.patch does not apply to fs/btrfs of linux-source-6.1 6.1.160-1 (log: " "$work/install.log" ||
    fail "E: no line naming the failed build's reason"
expect "  $N: its own btrfs module (not a 6.1 kernel: the series is for 6.1; 6.7 and later mount clones with temp_fsid)"
if grep -q '6.1.0-53-amd64' "$work/install.log"; then fail "a headers-only directory was taken for a kernel"; fi
# dkms was asked for exactly the 6.1 kernels without the module that have headers: B, D, E
printf 'dkms install -m btrfs-scan-gate -v %s -k %s\n' "$ver" "$D" "$ver" "$E" "$ver" "$B" | sort >"$work/dkms.want"
sort "$work/dkms.log" | diff -u "$work/dkms.want" - || fail "dkms was asked for other kernels than B, D, E"
[ "$(awk 'END { print NR }' "$work/install.log")" -ge 7 ] || fail "too few lines"
# a release whose kernels do not need the module (trixie: 6.12 only): nothing built, and it says so
rm -rf "$work/modules"/6.1.* "$work/boot"/vmlinuz-6.1.*
: >"$work/dkms.log"
run "$work/trixie.log" --install
[ ! -s "$work/dkms.log" ] || fail "6.12 only: dkms was asked: $(cat "$work/dkms.log")"
grep -q "^  no 6.1 kernel is installed: nothing to build. Kernels 6.7 and later mount clones with temp_fsid" "$work/trixie.log" ||
    { cat "$work/trixie.log"; fail "6.12 only: the list does not say that nothing is needed"; }
echo "ok: 6.12 only: $(sed -n 3p "$work/trixie.log")"
echo "PASS: kernels.sh --install builds the 6.1 kernels left without the module and names every installed kernel with its module and the reason"

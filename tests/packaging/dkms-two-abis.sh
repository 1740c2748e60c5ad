#!/bin/bash
# dkms-two-abis.sh DEBDIR_FILE WORK: btrfs-scan-gate-dkms across two installed 6.1 kernels and an
# upgrade of the package, in a throw-away Debian 12 root (throwaway-root.sh), with real dkms builds
# (four of them, 1-2 minutes each here).
#  - Kernel A: the ABI whose version equals the root's linux-source-6.1; kernel B: the newest 6.1 ABI
#    of another stable point release in the archive (its linux-source-6.1 version is not
#    installed). Both get their real linux-headers from the archive (apt-get in the root); the
#    kernels themselves are stand-ins (/boot/vmlinuz-*, /boot/config-*, the stock btrfs.ko under
#    kernel/fs/btrfs: the harness's stock module of A, also for B, where it only marks "in-tree"),
#    and `uname -r` says A runs, as on a machine booted into its newest kernel.
#  - The root is an image build (a chroot) whose builder says the target has no Secure Boot
#    (module-signing.conf: key=none), and keeps B's source as README.Debian says
#    (source.sh keep B: fs/btrfs of B's version from the archive) before installing.
#  - Install: dkms's own postinst builds for the running and the newest kernel only (A); the
#    package's postinst must build B too, A from the shipped fs/btrfs, B from the kept one, and
#    name both kernels as patched. Each module's vermagic names its kernel.
#  - Upgrade (the same package with a higher Debian version: prerm runs dkms remove --all): both
#    kernels have the patched module again, B's source comes from the kept fs/btrfs (no download),
#    and the postinst says so.
#  - Compilers run through ccache (Debian's headers honour DEBIAN_KERNEL_USE_CCACHE), its cache in
#    $BSG_CACHE/ccache-dkms-two-abis: the upgrade's rebuilds and later runs compile nothing again,
#    while dkms, the package's scripts and make still run for real.
#  - `btrfs-scan-gate status` in the root (the helper's package installed) lists the same kernels
#    as patched.
# Before this test's change (issue 20 item 1) kernel B was never built: dkms's postinst does not ask
# for it, and the build script refused a kernel whose version differs from linux-source-6.1's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
cache=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
debfile=$1 work=$2
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mount namespace)"
if [ -z "${BSG_DKMS_TWO_ABIS_NS:-}" ]; then
    command -v unshare >/dev/null || fail "unshare not installed (util-linux)"
    exec unshare -m env BSG_DKMS_TWO_ABIS_NS=1 "$0" "$@"
fi
env=$cache/kernel-6.1.env
[ -e "$env" ] || fail "no $env (scripts/setup.sh runs tests/qemu/setup.sh, which writes it)"
# shellcheck disable=SC1090 # written by tests/qemu/setup.sh: SRCVER, ABI
. "$env"
: "${SRCVER:?}" "${ABI:?}"
debdir=$(cat "$debfile")
deb=$(ls "$debdir"/btrfs-scan-gate-dkms_*_all.deb) || fail "no btrfs-scan-gate-dkms .deb in $debdir"
helperdeb=$(ls "$debdir"/btrfs-scan-gate_*_"$(dpkg --print-architecture)".deb) || fail "no btrfs-scan-gate .deb in $debdir"
stock=$(find "$cache/image-$SRCVER/root/lib/modules/$ABI" -name 'btrfs.ko*' | head -n 1)
[ -n "$stock" ] || fail "no stock btrfs.ko of $ABI under $cache/image-$SRCVER"
[ -e /etc/apt/sources.list.d/debian.sources ] || skip "no /etc/apt/sources.list.d/debian.sources to give the root the host's archive"

rm -rf "$work"
root=$work/root logs=$work/logs
mkdir -p "$logs"
trap '"$here/throwaway-root.sh" remove "$root"' EXIT
"$here/throwaway-root.sh" unpack "$root" --archive || fail "no throw-away root"
mkdir -p "$cache/ccache-dkms-two-abis" "$root/var/cache/ccache"
mount --bind "$cache/ccache-dkms-two-abis" "$root/var/cache/ccache"
# `uname -r` of the root: kernel A runs (set below)
mkdir -p "$root/usr/local/bin"
in_root() {
    chroot "$root" env -i PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
        DEBIAN_KERNEL_USE_CCACHE=1 CCACHE_DIR=/var/cache/ccache CCACHE_MAXSIZE=2G "$@"
}

# shellcheck disable=SC2016 # a dpkg-query format, not a shell expansion
srcver=$(in_root dpkg-query -W -f='${Version}' linux-source-6.1)
abi_of() { # VERSION: the amd64 6.1 ABI whose headers have that version
    local p
    for p in $(in_root apt-cache search --names-only '^linux-headers-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' | sort -V -r); do
        if in_root apt-cache madison "$p" | awk -F'|' '{gsub(/ /,"",$2); print $2}' | grep -qx "$1"; then
            echo "${p#linux-headers-}"
            return 0
        fi
    done
    return 1
}
a=$(abi_of "$srcver") || skip "the archive has no linux-headers-6.1.0-*-amd64 at the root's linux-source-6.1 $srcver"
# B: the newest ABI of another upstream point release
b='' bver=
for p in $(in_root apt-cache search --names-only '^linux-headers-6\.1\.0-[0-9]+-amd64$' | awk '{print $1}' | sort -V -r); do
    v=$(in_root apt-cache show "$p" | sed -n 's/^Version: //p' | head -n 1)
    if [ "${v%-*}" != "${srcver%-*}" ]; then b=${p#linux-headers-} bver=$v; break; fi
done
[ -n "$b" ] || skip "the archive has no 6.1 ABI of another point release than $srcver"
echo "kernel A: $a ($srcver, = the root's linux-source-6.1); kernel B: $b ($bver)"
cat >"$root/usr/local/bin/uname" <<EOF
#!/bin/sh
[ "\$1" = -r ] && [ \$# -eq 1 ] && { echo $a; exit 0; }
exec /bin/uname "\$@"
EOF
chmod 0755 "$root/usr/local/bin/uname"

start=$(date +%s)
in_root apt-get install -y --no-install-recommends ccache "linux-headers-$a=$srcver" "linux-headers-$b=$bver" \
    >"$logs/apt-headers.log" 2>&1 || { tail -n 30 "$logs/apt-headers.log"; fail "apt-get install of both kernels' headers"; }
echo "headers of both kernels installed in $(( $(date +%s) - start )) s"
for k in "$a" "$b"; do
    in_root test -e "/lib/modules/$k/build/include" || fail "no /lib/modules/$k/build/include after installing linux-headers-$k"
    touch "$root/boot/vmlinuz-$k"
    cp "$root/usr/src/linux-headers-$k/.config" "$root/boot/config-$k"
    mkdir -p "$root/lib/modules/$k/kernel/fs/btrfs"
    cp "$stock" "$root/lib/modules/$k/kernel/fs/btrfs/"
done
cp "$helperdeb" "$deb" "$root/tmp/"
in_root dpkg -i "/tmp/${helperdeb##*/}" >"$logs/dpkg-helper.log" 2>&1 || { cat "$logs/dpkg-helper.log"; fail "dpkg -i btrfs-scan-gate"; }

both_patched() { # TAG: each kernel has updates/dkms/btrfs.ko for itself; the postinst said so
    local tag=$1 k vm
    for k in "$a" "$b"; do
        [ -e "$root/lib/modules/$k/updates/dkms/btrfs.ko" ] ||
            { tail -n 40 "$logs/dpkg-$tag.log"; fail "$tag: $k has no updates/dkms/btrfs.ko"; }
        vm=$(modinfo -F vermagic "$root/lib/modules/$k/updates/dkms/btrfs.ko")
        [ "${vm%% *}" = "$k" ] || fail "$tag: the module of $k has vermagic '$vm'"
        modinfo -F parm "$root/lib/modules/$k/updates/dkms/btrfs.ko" | grep -q '^skip_scan:' || fail "$tag: the module of $k has no skip_scan"
        grep -qx "  $k: patched (updates/dkms/btrfs.ko)" "$logs/dpkg-$tag.log" ||
            { tail -n 20 "$logs/dpkg-$tag.log"; fail "$tag: the postinst does not name $k as patched"; }
    done
    echo "ok: $tag: $a and $b run the patched module; the postinst says:"
    sed -n '/installed kernels and their btrfs module/,$p' "$logs/dpkg-$tag.log" | head -n 4
}

# the builder's word on signing, and B's source kept by hand (the package ships A's version only)
mkdir -p "$root/etc/btrfs-scan-gate"
echo key=none >"$root/etc/btrfs-scan-gate/module-signing.conf"
dpkg-deb -x "$deb" "$work/unpacked"
keep=$(cd "$work/unpacked" && ls usr/src/btrfs-scan-gate-*/source.sh)
mkdir -p "$root/tmp/keep"
cp -a "$work/unpacked/${keep%/source.sh}/." "$root/tmp/keep/"
start=$(date +%s)
in_root bash /tmp/keep/source.sh keep "$b" >"$logs/keep.log" 2>&1 || { cat "$logs/keep.log"; fail "source.sh keep $b"; }
echo "source.sh keep $b: $(( $(date +%s) - start )) s: $(tail -n 1 "$logs/keep.log")"

# install
start=$(date +%s)
in_root dpkg -i "/tmp/${deb##*/}" >"$logs/dpkg-install.log" 2>&1 || { tail -n 40 "$logs/dpkg-install.log"; fail "dpkg -i btrfs-scan-gate-dkms"; }
echo "install (two module builds, B's source fetched): $(( $(date +%s) - start )) s"
grep -q "Building for $a\$" "$logs/dpkg-install.log" ||
    echo "note: dkms's postinst built for: $(grep 'Building for' "$logs/dpkg-install.log")"
both_patched install
kept=$root/var/cache/btrfs-scan-gate-dkms/linux-btrfs-$bver.tar.xz
[ -s "$kept" ] || fail "install: B's fs/btrfs ($kept) was not kept"
[ ! -e "$root/var/cache/btrfs-scan-gate-dkms/linux-btrfs-$srcver.tar.xz" ] || fail "install: A's source was kept although shipped"
grep -q "fs/btrfs of linux-source-6.1 $srcver (/usr/src/btrfs-scan-gate-[^/]*/linux-btrfs-$srcver.tar.xz)" \
    "$root"/var/lib/dkms/btrfs-scan-gate/*/"$a"/*/log/make.log 2>/dev/null ||
    echo "note: A's make.log does not name the shipped source (log kept only on failure?)"
kept_id=$(stat -c '%i %Y' "$kept")

# upgrade: the same package, one Debian revision up
rm -rf "$work/repack"
dpkg-deb -R "$deb" "$work/repack"
old=$(dpkg-deb -f "$deb" Version)
sed -i "s/^Version: .*/Version: $old+upgradetest1/" "$work/repack/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$work/repack" "$root/tmp/btrfs-scan-gate-dkms_upgrade_all.deb" >/dev/null
start=$(date +%s)
in_root dpkg -i /tmp/btrfs-scan-gate-dkms_upgrade_all.deb >"$logs/dpkg-upgrade.log" 2>&1 ||
    { tail -n 40 "$logs/dpkg-upgrade.log"; fail "dpkg -i (upgrade)"; }
echo "upgrade $old -> $old+upgradetest1 (two module builds): $(( $(date +%s) - start )) s"
grep -q 'dkms remove\|Deleting module\|Module btrfs-scan-gate' "$logs/dpkg-upgrade.log" ||
    echo "note: the upgrade log shows no removal by the old prerm"
both_patched upgrade
[ "$(stat -c '%i %Y' "$kept")" = "$kept_id" ] || fail "upgrade: B's source was fetched again"

in_root ccache -s >"$logs/ccache.txt" 2>&1 || true
echo "ccache: $(grep -E '^ *(Hits|Misses):' "$logs/ccache.txt" | tr -s ' ' | tr '\n' ' ')"

# the helper's status agrees (its `kernels:` lines)
in_root btrfs-scan-gate status >"$logs/status.txt" 2>&1 || true
for k in "$a" "$b"; do
    grep -q "$k.*: btrfs from updates/dkms (btrfs-scan-gate-dkms: patched)" "$logs/status.txt" ||
        { cat "$logs/status.txt"; fail "btrfs-scan-gate status does not list $k as patched"; }
done
echo "ok: btrfs-scan-gate status lists $a and $b as patched"
echo "PASS: btrfs-scan-gate-dkms built for both installed 6.1 kernels ($a from the shipped source, $b from $bver kept with source.sh keep), and again after an upgrade; the postinst and status name both as patched"

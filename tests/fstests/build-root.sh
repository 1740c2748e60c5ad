#!/bin/bash
# build-root.sh: builds (or finds cached) the Debian 12 root that runs fstests in the 6.1 guest and
# prints the path of its disk image (ext4, booted read-only: each run writes to a snapshot).
# Cache, under $BSG_CACHE (/var/cache/btrfs-scan-gate):
#   fstests-root-<pkgkey>.tar     mmdebstrap minbase root with tests/fstests/packages (key: that list)
#   fstests-img-<key>/root.img    the root with fstests built in it (a chroot on the host: the same
#                                 Debian 12 userspace, much faster than building under TCG), the
#                                 fsgqa users, and the 6.1 image's modules (pruned, depmod'ed);
#                                 key: fst_root_key (package list, fstests source, kernel, this file)
#   fstests-img-<key>/build.log   the fstests build log
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

fst_locate_src || { fst_log "missing: $FST_MISSING"; exit 77; }
qemu_kernel 6.1
key=$(fst_root_key)
out=$BSG_CACHE/fstests-img-$key
if [ -e "$out/.done" ]; then
    echo "$out/root.img"
    exit 0
fi
mkdir -p "$BSG_CACHE/locks"
exec 9>"$BSG_CACHE/locks/fstests-root"
flock -w 3600 9 || { fst_log "timed out waiting for the fstests root build lock"; exit 1; }
[ ! -e "$out/.done" ] || { echo "$out/root.img"; exit 0; }
t0=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/var/tmp}/bsg-fstests-root.XXXXXX")
trap 'rm -rf "$work"' EXIT

pkgkey=$(fst_packages | sha256sum | cut -c1-16)
tarball=$BSG_CACHE/fstests-root-$pkgkey.tar
if [ ! -e "$tarball" ]; then
    fst_log "mmdebstrap: Debian 12 minbase + tests/fstests/packages (under a minute with a warm apt archive)"
    mmdebstrap --variant=minbase --mode=root --format=tar \
        --aptopt='Acquire::Check-Valid-Until "false"' --aptopt='APT::Install-Recommends "false"' \
        --include="$(fst_packages | paste -sd,)" \
        bookworm "$tarball.tmp" "deb http://deb.debian.org/debian bookworm bookworm-updates main" \
        "deb http://deb.debian.org/debian-security bookworm-security main" >"$work/mmdebstrap.log" 2>&1 ||
        { tail -n 30 "$work/mmdebstrap.log" >&2; fst_log "mmdebstrap failed"; exit 1; }
    mv "$tarball.tmp" "$tarball"
fi

tree=$work/tree
mkdir -p "$tree"
tar -C "$tree" -xf "$tarball"

# chroot work in a private mount namespace (nothing stays mounted on the host)
in_root() {
    unshare -m --propagation private sh -c '
        t=$1; shift
        mount -t proc proc "$t/proc" && mount -t sysfs sys "$t/sys" && mount --rbind /dev "$t/dev" &&
            chroot "$t" "$@"' sh "$tree" "$@"
}

# fstests: unpacked (or copied) into /opt/xfstests and built there
mkdir -p "$tree/opt/xfstests"
if [ -f "$FST_SRC" ]; then
    tar -C "$tree/opt/xfstests" -xf "$FST_SRC"
else
    cp -a "$FST_SRC/." "$tree/opt/xfstests/"
fi
# a git archive may have one top directory: use it as the tree
if [ ! -e "$tree/opt/xfstests/check" ] && [ "$(ls "$tree/opt/xfstests" | wc -l)" = 1 ]; then
    d=$(ls "$tree/opt/xfstests")
    mv "$tree/opt/xfstests/$d" "$tree/opt/xfstests.d" && rmdir "$tree/opt/xfstests" &&
        mv "$tree/opt/xfstests.d" "$tree/opt/xfstests"
fi
[ -x "$tree/opt/xfstests/check" ] || { fst_log "$FST_SRC does not look like fstests (no check script)"; exit 1; }
mkdir -p "$out.tmp"
fst_log "building fstests in a chroot of the root (make -j$(nproc))"
if ! in_root sh -c "cd /opt/xfstests && make -j$(nproc)" >"$out.tmp/build.log" 2>&1; then
    tail -n 40 "$out.tmp/build.log" >&2
    fst_log "the fstests build failed; log: $out.tmp/build.log"
    exit 1
fi
[ -x "$tree/opt/xfstests/ltp/fsstress" ] || { fst_log "no ltp/fsstress after the build"; exit 1; }
fst_log "fstests built after $(( $(date +%s) - t0 )) s"

# the users fstests asks for (README: fsgqa, 123456-fsgqa, fsgqa2, group fsgqa)
# (shadow 4.13 refuses a name starting with a digit unless told --badname)
in_root sh -c 'useradd -m -U fsgqa && useradd -m fsgqa2 &&
    { useradd -m --badname 123456-fsgqa || useradd -m 123456-fsgqa; } &&
    { getent group fsgqa >/dev/null || groupadd fsgqa; }' >>"$out.tmp/build.log" 2>&1 ||
    { tail -n 5 "$out.tmp/build.log" >&2; fst_log "creating the fsgqa users failed"; exit 1; }

# the 6.1 image's modules: what a VM with virtio disks, device mapper, loop and scsi_debug needs
kdir=lib/modules/$QK_KVER
mkdir -p "$tree/$kdir/kernel/drivers" "$tree/$kdir/updates"
for f in "$QK_ROOT/$kdir"/modules.*; do cp "$f" "$tree/$kdir/"; done
for d in arch block crypto fs lib mm; do
    cp -a "$QK_ROOT/$kdir/kernel/$d" "$tree/$kdir/kernel/"
done
for d in block virtio md scsi char; do
    cp -a "$QK_ROOT/$kdir/kernel/drivers/$d" "$tree/$kdir/kernel/drivers/"
done
in_root depmod "$QK_KVER"

# a lean root for a guest whose PID 1 is the harness's script
echo fstests-guest >"$tree/etc/hostname"
printf '127.0.0.1\tlocalhost fstests-guest\n' >"$tree/etc/hosts"
mkdir -p "$tree/mnt/test" "$tree/mnt/scratch" "$tree/bsg"
rm -rf "$tree/var/cache/apt/archives"/*.deb "$tree/var/lib/apt/lists"/*

size=$(( $(du -sm "$tree" | cut -f1) + 1536 ))
truncate -s "${size}M" "$out.tmp/root.img"
mkfs.ext4 -q -F -L fstests-root -d "$tree" "$out.tmp/root.img" >>"$out.tmp/build.log" 2>&1 ||
    { tail -n 20 "$out.tmp/build.log" >&2; fst_log "mkfs.ext4 -d failed"; exit 1; }
rm -rf "$out"
mv "$out.tmp" "$out"
touch "$out/.done"
# keep the newest two roots
ls -dt "$BSG_CACHE"/fstests-img-*/ 2>/dev/null | tail -n +3 | xargs -r rm -rf
fst_log "root image $out/root.img (${size} MiB, sparse) built in $(( $(date +%s) - t0 )) s"
echo "$out/root.img"

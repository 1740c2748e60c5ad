#!/bin/bash
# The fstests guest's PID 1 (after the initramfs's switch_root): prepares the system (mounts, udev,
# the btrfs.ko under test), finds the disks by serial, writes fstests' local.config, runs ./check
# with the list and writes the results directory as a tar archive onto the output disk (serial
# fst-out). Console markers read by run.sh:
#   FSTESTS-MODULE: sha256=... taint=... virtual_fsid=yes|no   the btrfs.ko that is loaded
#   FST: ...                                               ./check's own output
#   FSTESTS-CHECK-EXIT: N                                  ./check's exit status
#   FSTESTS-RESULTS-WRITTEN                                the output disk holds the results
#   CASE-EXIT: N                                           0 all done; 3 setup failed
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
cd /

finish() {
    echo "CASE-EXIT: $1"
    sync
    echo 1 >/proc/sys/kernel/sysrq
    echo o >/proc/sysrq-trigger
    sleep 60
}
die() { echo "run-fstests: $*"; finish 3; }
say() { echo "run-fstests: [uptime $(cut -d' ' -f1 /proc/uptime)] $*"; }

mount -t proc proc /proc
mount -t sysfs sys /sys
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
# what systemd creates in /dev at boot and bash's process substitution <(...) needs (/dev/fd/63):
# without it fstests' _require_batched_discard prints "grep: /dev/fd/63: No such file or
# directory" into the test's output (btrfs/318 failed so in all three configurations)
ln -sfn /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
mount -o remount,rw /
hostname fstests-guest
. /bsg/config || die "no /bsg/config"

# udev as on a real system: device nodes, links, and 64-btrfs.rules' readiness scans
/lib/systemd/systemd-udevd --daemon --resolve-names=never || die "systemd-udevd did not start"
udevadm trigger --action=add
udevadm settle -t 60 || echo "run-fstests: udevadm settle timed out, going on"

# the module under test: installed where modprobe finds it first, so fstests' own module reloads
# load the same one
kver=$(uname -r)
mkdir -p "/lib/modules/$kver/updates"
cp /bsg/btrfs.ko "/lib/modules/$kver/updates/btrfs.ko"
depmod -a "$kver"
modprobe btrfs || die "modprobe btrfs failed"
# the loaded module is the one under test: modprobe resolves btrfs to updates/, and the feature
# list says stock or patched (an out-of-tree module has no srcversion to compare)
[ -d /sys/module/btrfs ] || die "btrfs is not loaded after modprobe"
path=$(modinfo -n btrfs)
[ "$path" = "/lib/modules/$kver/updates/btrfs.ko" ] || die "modprobe resolves btrfs to $path, not updates/"
sum=$(sha256sum </bsg/btrfs.ko | cut -c1-16)
vf=no
[ -e /sys/fs/btrfs/features/virtual_fsid ] && vf=yes
echo "FSTESTS-MODULE: sha256=$sum taint=$(cat /sys/module/btrfs/taint) virtual_fsid=$vf"

dev_by_serial() {
    local b
    for b in /sys/block/vd*; do
        [ "$(cat "$b/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
    done
    return 1
}
test_dev=$(dev_by_serial fst-test) || die "no disk with serial fst-test"
out_dev=$(dev_by_serial fst-out) || die "no disk with serial fst-out"
pool=
for i in $(seq 1 "$FST_POOL"); do
    d=$(dev_by_serial "fst-scratch$i") || die "no disk with serial fst-scratch$i"
    pool="$pool $d"
done
pool=${pool# }
say "TEST_DEV=$test_dev SCRATCH_DEV_POOL='$pool' MOUNT_OPTIONS='$FST_MOUNT_OPTIONS'"
mkfs.btrfs -f "$test_dev" >/tmp/mkfs-test.log 2>&1 || { cat /tmp/mkfs-test.log; die "mkfs.btrfs of TEST_DEV failed"; }

cd /opt/xfstests || die "no /opt/xfstests"
# the project's own tests (tests/fstests/tests/<dir>/ in the repository): installed as
# tests/<dir>/ of the fstests tree with the group.list that ./check needs to accept them
for d in /bsg/tests/*/; do
    [ -d "$d" ] || continue
    n=$(basename "$d")
    rm -rf "tests/$n" && cp -r "$d" "tests/$n" || die "cannot install the tests of $n"
    (cd "tests/$n" && ../../tools/mkgroupfile group.list) || die "mkgroupfile failed for tests/$n"
    say "installed the project's tests tests/$n: $(find "tests/$n" -maxdepth 1 -name '[0-9][0-9][0-9]' | wc -l)"
done
{
    echo "export FSTYP=btrfs"
    echo "export TEST_DEV=$test_dev"
    echo "export TEST_DIR=/mnt/test"
    echo "export SCRATCH_MNT=/mnt/scratch"
    echo "export SCRATCH_DEV_POOL='$pool'"
    [ -z "$FST_MOUNT_OPTIONS" ] || echo "export MOUNT_OPTIONS='$FST_MOUNT_OPTIONS'"
} >local.config
say "$(wc -w </bsg/list) tests: $(tr '\n' ' ' </bsg/list)"
# shellcheck disable=SC2046
./check -R xunit $(cat /bsg/list) 2>&1 | sed -u 's/^/FST: /'
rc=${PIPESTATUS[0]}
echo "FSTESTS-CHECK-EXIT: $rc"
say "./check ended"
dmesg >results/dmesg.log 2>&1
cp local.config results/
tar -cf "$out_dev" results || die "writing the results to $out_dev failed"
sync
echo "FSTESTS-RESULTS-WRITTEN"
finish 0

#!/bin/bash
# run-udev-case.sh CASE.sh STAGE [WORKDIR]: boots a whole-system case: the QEMU harness's kernel,
# module and disks (tests/qemu/lib.sh) plus Debian's systemd-udevd, udevadm, the stock rules that
# name disks (50-udev-default, 60-persistent-storage) and either the staged (`cmake --install`
# DESTDIR=STAGE) gate rules, unit and helper, or systemd's stock 64-btrfs.rules. Exits with the
# case's exit status (124: no verdict before the timeout, 125: panic; 77: prerequisite missing,
# a failure when CI=true). Console: WORKDIR/console.log. BSG_SYSTEM_EXTRA_FILES="src:dst ..." adds
# files to the guest.
#
# Header (one line):
#   # qemu-case: kernel=6.1|6.12 module=stock|patched disks=LAYOUT [timeout=S] [rules=gate|stock]
#   #            [hotplug=I,J] [state=NAME] [append='...'] [modparams='...']
# hotplug=I,J: disk I (disk0.img is 0) is not attached at boot; when the guest prints
#   "HOTPLUG-REQUEST: dI" on the console this driver attaches it through the QEMU monitor
#   (device_add virtio-blk-pci, same serial as at cold boot).
# bins='prog ...': more host programs (found in PATH or /sbin) for the guest, with their libraries.
# udevrules='NN-name.rules ...': more of Debian's udev rules (/lib/udev/rules.d) for the guest (a
#   case that writes to disks under udevd takes 60-block.rules, whose inotify watch turns a write
#   into change events as on an installed system).
# state=NAME: the guest's "STATE: " lines (its canonical state dump, see system-lib.sh) must equal
#   tests/qemu/udev/expected/NAME.state; they are saved to WORKDIR/state.txt either way.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib.sh"

case_file=$(realpath "$1")
stage=$(realpath "$2")
name=$(basename "$case_file" .sh)
work=${3:-${TMPDIR:-/var/tmp}/bsg-qemu-system/$name}

prereq_missing() {
    echo "run-udev-case: prerequisite missing: $*" >&2
    # CI must not skip the QEMU suite silently: there a missing prerequisite is a failure.
    if [ "${CI:-}" = true ]; then exit 1; fi
    exit 77
}
for t in qemu-system-x86_64 busybox mkfs.btrfs btrfs sgdisk mkfs.vfat udevadm; do
    command -v "$t" >/dev/null || prereq_missing "$t (run scripts/setup.sh)"
done
[ -x /lib/systemd/systemd-udevd ] || prereq_missing "/lib/systemd/systemd-udevd (package udev)"

header=$(grep -m1 '^# qemu-case:' "$case_file" | sed 's/^# qemu-case://')
[ -n "$header" ] || { echo "run-udev-case: $case_file has no '# qemu-case:' header" >&2; exit 2; }
kernel=6.1 module=stock disks=clone2 timeout=120 rules=gate hotplug='' state=''
eval "$(printf '%s\n' $header | grep -E '^(kernel|module|disks|timeout|rules|hotplug|state)=[A-Za-z0-9.,_-]*$' || true)"
modparams=$(sed -n "s/^# qemu-case:.*modparams='\([^']*\)'.*/\1/p" "$case_file" | head -n 1)
append=$(sed -n "s/^# qemu-case:.*append='\([^']*\)'.*/\1/p" "$case_file" | head -n 1)

qemu_kernel "$kernel" || prereq_missing "kernel $kernel (run tests/qemu/setup.sh)"
ko=$(qemu_btrfs_ko "$module") || { echo "run-udev-case: no $module btrfs.ko" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
qemu_make_disks "$disks" "$work/disks" >"$work/mkfs.log" 2>&1 || { cat "$work/mkfs.log"; exit 1; }

# hot-plugged disks: keep their -drive (the backend), drop their -device until the guest asks
declare -A hot_dev=()
if [ -n "$hotplug" ]; then
    mapfile -t args <"$work/disks/disks.args"
    : >"$work/disks/disks.args"
    cold=0
    for ((i = 0; i < ${#args[@]}; i += 2)); do
        id=$(printf '%s\n' "${args[i + 1]}" | sed -n 's/.*drive=\(d[0-9]*\).*/\1/p')
        if [ "${args[i]}" = -device ] && [ -n "$id" ] && [[ ",$hotplug," == *",${id#d},"* ]]; then
            hot_dev[$id]=${args[i + 1]}
            continue
        fi
        [ "${args[i]}" = -device ] && cold=$((cold + 1))
        printf '%s\n%s\n' "${args[i]}" "${args[i + 1]}" >>"$work/disks/disks.args"
    done
    echo "$cold" >"$work/disks/disks.count"
fi

# the guest's udev: Debian's udevd and udevadm, the rules that create the links the case checks
files=
for r in 50-udev-default.rules 60-persistent-storage.rules; do
    files="$files /lib/udev/rules.d/$r:/lib/udev/rules.d/$r"
done
for b in ata_id scsi_id; do [ -e /lib/udev/$b ] && files="$files /lib/udev/$b:/lib/udev/$b"; done
bins="/lib/systemd/systemd-udevd $(command -v udevadm)"
# device-mapper cases (kmods='dm-mod'): Debian's dmsetup and the dm rules that name dm devices,
# import DM_NAME and complete dmsetup's udev cookies, as on an installed system
if grep -q "^# qemu-case:.*kmods='[^']*dm-mod" "$case_file"; then
    [ -x /sbin/dmsetup ] || prereq_missing "/sbin/dmsetup (package dmsetup)"
    for r in 55-dm.rules 60-persistent-storage-dm.rules 95-dm-notify.rules; do
        [ -e /lib/udev/rules.d/$r ] || prereq_missing "/lib/udev/rules.d/$r (package dmsetup)"
        files="$files /lib/udev/rules.d/$r:/lib/udev/rules.d/$r"
    done
    bins="$bins /sbin/dmsetup"
    files="$files /sbin/dmsetup:/sbin/dmsetup"
fi
for r in $(sed -n "s/^# qemu-case:.*udevrules='\([^']*\)'.*/\1/p" "$case_file" | head -n 1); do
    [ -e "/lib/udev/rules.d/$r" ] || prereq_missing "/lib/udev/rules.d/$r"
    files="$files /lib/udev/rules.d/$r:/lib/udev/rules.d/$r"
done
for b in $(sed -n "s/^# qemu-case:.*bins='\([^']*\)'.*/\1/p" "$case_file" | head -n 1); do
    p=$(PATH=$PATH:/sbin:/usr/sbin command -v "$b") || prereq_missing "$b (run scripts/setup.sh)"
    bins="$bins $p"
done
files="$files /lib/systemd/systemd-udevd:/lib/systemd/systemd-udevd $here/system-lib.sh:/lib/system-lib.sh"
files="$files ${BSG_SYSTEM_EXTRA_FILES:-}"   # more "src:dst" pairs (demo/ab-demo.sh)
case $rules in
gate)
    helper=$(find "$stage" -name btrfs-scan-gate -type f -perm -u+x -path '*bin/*' | head -n 1)
    unit=$(find "$stage" -name btrfs-scan-gate.service -type f | head -n 1)
    [ -n "$helper" ] && [ -n "$unit" ] ||
        { echo "run-udev-case: no helper or unit under $stage (cmake --install DESTDIR=$stage)" >&2; exit 1; }
    # the gate's rules wherever the build's prefix put them, in the guest's /etc/udev/rules.d
    for r in "$stage"/etc/udev/rules.d/*.rules "$stage"/{lib,usr/lib,usr/local/lib}/udev/rules.d/*.rules; do
        [ -e "$r" ] && files="$files $r:/etc/udev/rules.d/${r##*/}"
    done
    bins="$bins $helper"
    files="$files $helper:${helper#$stage} $unit:/lib/systemd/system/btrfs-scan-gate.service"
    ;;
stock)
    files="$files /lib/udev/rules.d/64-btrfs.rules:/lib/udev/rules.d/64-btrfs.rules"
    ;;
*) echo "run-udev-case: rules= must be gate or stock" >&2; exit 2 ;;
esac
QEMU_EXTRA_BINS=$bins QEMU_EXTRA_FILES=$files QEMU_DISKDIR=$work/disks \
    qemu_initramfs "$case_file" "$work/initrd.gz" "$ko" "$modparams"

echo "run-udev-case: $name: kernel $QK_KVER, module $module ($ko), disks $disks, rules $rules${hotplug:+, hotplug $hotplug}"
start=$(date +%s%N)
qemu_args=()
watcher='' drain=''
if [ -n "$hotplug" ]; then
    # the monitor on two FIFOs (no sockets, no ports); a watcher answers the guest's requests
    mkfifo "$work/mon.in" "$work/mon.out"
    qemu_args=(-monitor "pipe:$work/mon")
    cat 0<>"$work/mon.out" >"$work/monitor.log" &
    drain=$!
    (
        exec 3<>"$work/mon.in"
        declare -A sent=()
        while [ ! -e "$work/.qemu-exited" ]; do
            for id in $(grep -ao 'HOTPLUG-REQUEST: d[0-9]*' "$work/console.log" 2>/dev/null | awk '{print $2}'); do
                [ -n "${sent[$id]:-}" ] && continue
                sent[$id]=1
                if [ -z "${hot_dev[$id]:-}" ]; then
                    echo "watcher: guest asked for $id, which is not a hotplug disk" >>"$work/hotplug.log"
                    continue
                fi
                echo "watcher: $(date +%T.%N) device_add ${hot_dev[$id]},id=hp-$id" >>"$work/hotplug.log"
                echo "device_add ${hot_dev[$id]},id=hp-$id" >&3
            done
            sleep 0.2
        done
    ) &
    watcher=$!
fi
QEMU_TIMEOUT=$timeout QEMU_APPEND=$append qemu_boot "$work/initrd.gz" "$work/console.log" "$work/disks" \
    "${qemu_args[@]}" || true
touch "$work/.qemu-exited"
[ -n "$watcher" ] && wait "$watcher"
[ -n "$drain" ] && { kill "$drain" 2>/dev/null || true; wait "$drain" 2>/dev/null || true; }
rc=$(qemu_verdict "$work/console.log")
echo "run-udev-case: $name: exit $rc after $(( ($(date +%s%N) - start) / 1000000 )) ms; console: $work/console.log"
[ -e "$work/hotplug.log" ] && cat "$work/hotplug.log"
grep -a '^STATE: ' "$work/console.log" | tr -d '\r' >"$work/state.txt" || true
if [ -n "$state" ]; then
    expected=$here/expected/$state.state
    if ! diff -u "$expected" "$work/state.txt" >"$work/state.diff" 2>&1; then
        echo "run-udev-case: $name: the state dump differs from $expected:"
        cat "$work/state.diff"
        [ "$rc" = 0 ] && rc=1
    else
        echo "run-udev-case: $name: state dump equals expected/$state.state ($(wc -l <"$work/state.txt") lines)"
    fi
fi
grep -a -e '^guest:' -e 'CASE-RESULT' -e 'BTRFS' "$work/console.log" | tr -d '\r' | tail -n 80 || true
[ "$rc" = 0 ] || { echo "---- console tail ----"; tail -n 40 "$work/console.log"; }
exit "$rc"

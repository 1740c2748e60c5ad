#!/bin/bash
# run-case.sh CASE.sh [WORKDIR]: boots the kernel the case's header asks for, with its module and
# disks, runs the case in the guest and exits with the case's exit status (124: no verdict before
# the timeout, 125: kernel panic). The console goes to WORKDIR/console.log.
# Header: "# qemu-case: kernel=6.1|6.12 module=stock|patched disks=clone2|raid1clone|single|none
#          [timeout=SECONDS] [modparams='skip_scan=/dev/vdb'] [append='...'] [kmods='dm-mod ...']
#          [bins='dmsetup ...'] (host programs copied into the guest with their libraries)"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

case_file=$(realpath "$1")
name=$(basename "$case_file" .sh)
work=${2:-${TMPDIR:-/var/tmp}/bsg-qemu/$name}

prereq_missing() {
    echo "run-case: prerequisite missing: $*" >&2
    # CI must not skip the QEMU suite silently: there a missing prerequisite is a failure.
    if [ "${CI:-}" = true ]; then exit 1; fi
    exit 77
}
for t in qemu-system-x86_64 busybox mkfs.btrfs btrfs; do
    command -v "$t" >/dev/null || prereq_missing "$t (run tests/qemu/setup.sh)"
done
[ -e /usr/src/linux-source-6.1.tar.xz ] || prereq_missing "linux-source-6.1 (run tests/qemu/setup.sh)"

header=$(grep -m1 '^# qemu-case:' "$case_file" | sed 's/^# qemu-case://')
[ -n "$header" ] || { echo "run-case: $case_file has no '# qemu-case:' header" >&2; exit 2; }
kernel=6.1 module=stock disks=clone2 timeout=300 modparams= append=
eval "$(printf '%s\n' $header | grep -E '^(kernel|module|disks|timeout)=' || true)"
modparams=$(sed -n "s/^# qemu-case:.*modparams='\([^']*\)'.*/\1/p" "$case_file" | head -n 1)
append=$(sed -n "s/^# qemu-case:.*append='\([^']*\)'.*/\1/p" "$case_file" | head -n 1)
for b in $(sed -n "s/^# qemu-case:.*bins='\([^']*\)'.*/\1/p" "$case_file" | head -n 1); do
    p=$(command -v "$b") || prereq_missing "$b"
    QEMU_EXTRA_BINS="${QEMU_EXTRA_BINS:-} $p"
done

qemu_kernel "$kernel" || prereq_missing "kernel $kernel (run tests/qemu/setup.sh)"
ko=$(qemu_btrfs_ko "$module") && [ -n "$ko" ] ||
    { echo "run-case: $name: no $module btrfs module (build failed?)" >&2; exit 1; }
rm -rf "$work" && mkdir -p "$work"
qemu_make_disks "$disks" "$work/disks" >"$work/mkfs.log" 2>&1 || { cat "$work/mkfs.log"; exit 1; }
QEMU_DISKDIR=$work/disks qemu_initramfs "$case_file" "$work/initrd.gz" "$ko" "$modparams"

echo "run-case: $name: kernel $QK_KVER, module $module${BSG_MUTANT:+ MUTANT $BSG_MUTANT} ($ko), disks $disks"
start=$(date +%s)
QEMU_TIMEOUT=$timeout QEMU_APPEND=$append qemu_boot "$work/initrd.gz" "$work/console.log" "$work/disks" || true
rc=$(qemu_verdict "$work/console.log")
echo "run-case: $name: exit $rc after $(( $(date +%s) - start )) s; console: $work/console.log"
grep -a -e '^guest:' -e 'CASE-RESULT' -e 'BTRFS' -e 'btrfs' "$work/console.log" | tail -n 60 || true
[ "$rc" = 0 ] || { echo "---- console tail ----"; tail -n 40 "$work/console.log"; }
exit "$rc"

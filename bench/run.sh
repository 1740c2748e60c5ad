#!/bin/bash
# bench/run.sh [--no-kernel] [--devices N] [--out DIR]: what the helper and the kernel series cost, next to the
# tools users would use instead, measured in one run (a benchmark, not a test: it prints numbers
# and ratios against baselines of the same run and never fails on a time).
#
#   1. per event, on real loop devices (two byte-identical clones and one unique fs, plus loop
#      devices each with a btrfs of its own until the host has N block devices, default 15):
#      `btrfs-scan-gate udev DEV` vs `btrfs device scan DEV` vs `udevadm test-builtin 'btrfs ready
#      DEV'` vs ready-floor (a process doing only the builtin's ioctl): instructions (callgrind,
#      every process of the command, fork children included), wall time (hyperfine -N);
#   2. I/O per event (strace): syscalls, opens and reads of block devices, ioctls, bytes; plus the
#      bytes the devices actually delivered (kernel reads included), from /sys/block/*/stat after
#      `blockdev --flushbufs` of the bench's own loop devices;
#   3. `boot` with 10, 100, 1000 simulated devices (umockdev, bench/boot-testbed.c; fake control
#      node and skip_scan, nothing reaches the host): instructions per device;
#   4. kernel (bench/kernel/run.sh, patched 6.1 in QEMU/TCG): mount+umount with virtual_fsid vs
#      plain, skipped vs normal scan. --no-kernel leaves it out.
#
# Needs root (loop devices). The helper and `btrfs device scan` act on the host kernel: only on
# the loop devices made here, which are forgotten (`btrfs device scan --forget DEV`) and detached at
# exit. The helper gets a private RUNDIR, a config naming the loop devices (trusted_disk=) and a fixed command line. Output: the
# table on stdout and in OUT/results.md (default OUT: /var/tmp/bench/run); logs under OUT/logs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

out=/var/tmp/bench/run
kernel=1
devices=15
while [ $# -gt 0 ]; do
    case $1 in
    --no-kernel) kernel=0 ;;
    --devices) devices=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "bench: needs root (loop devices)" >&2; exit 1; }
for t in valgrind callgrind_annotate hyperfine strace mkfs.btrfs btrfs udevadm losetup blockdev \
         umockdev-wrapper cmake make gcc pkg-config awk; do
    command -v "$t" >/dev/null || { echo "bench: missing $t (scripts/setup.sh installs it)" >&2; exit 1; }
done

rm -rf "$out"
mkdir -p "$out"/{logs,cg,strace,work}
out=$(cd "$out" && pwd)
logs=$out/logs work=$out/work
res=$out/results.md
started=$(date +%s)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
say() { echo "bench: $*" >&2; }

# ---- build (RelWithDebInfo: -O2 -g, as a distribution builds it) --------------------------------
say "building the helper and the bench programs (logs: $logs)"
cmake -S "$repo" -B "$out/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBSG_SANITIZERS=OFF \
    -DBSG_VALGRIND=OFF -DBSG_QEMU_TESTS=OFF >"$logs/cmake.log" 2>&1 || { tail -n 20 "$logs/cmake.log"; exit 1; }
make -C "$out/build" -j2 btrfs-scan-gate-test >"$logs/make.log" 2>&1 || { tail -n 20 "$logs/make.log"; exit 1; }
H=$out/build/helper/btrfs-scan-gate-test # the test seams point it at the testbed
gcc -O2 -Wall -Wextra -Wno-unused-parameter -o "$out/boot-testbed" "$here/boot-testbed.c" \
    $(pkg-config --cflags --libs umockdev-1.0 gio-2.0) >"$logs/gcc.log" 2>&1 || { cat "$logs/gcc.log"; exit 1; }
gcc -O2 -Wall -Wextra -o "$out/ready-floor" "$here/ready-floor.c" >>"$logs/gcc.log" 2>&1 || { cat "$logs/gcc.log"; exit 1; }
FLOOR=$out/ready-floor

# ---- loop devices: two clones and one unique fs -------------------------------------------------
loops=()
cleanup() {
    local d
    for d in "${loops[@]}"; do
        btrfs device scan --forget "$d" >>"$logs/cleanup.log" 2>&1 || true
        losetup -d "$d" >>"$logs/cleanup.log" 2>&1 || true
    done
}
trap cleanup EXIT
truncate -s 256M "$work/clone-a.img" "$work/unique.img"
mkfs.btrfs -q -f -L bench-clone "$work/clone-a.img" >"$logs/mkfs.log" 2>&1
cp --sparse=always "$work/clone-a.img" "$work/clone-b.img"
mkfs.btrfs -q -f -L bench-unique "$work/unique.img" >>"$logs/mkfs.log" 2>&1
for img in clone-a clone-b unique; do
    d=$(losetup -f --show "$work/$img.img")
    loops+=("$d")
done
A=${loops[0]} B=${loops[1]} U=${loops[2]}
say "loop devices: clones $A $B, unique $U"
# more block devices, each a btrfs of its own, until the host has --devices of them (an A/B
# handheld has about 15): every event decides the whole set, so the set's size is part of its cost
extra=0
while [ "$(ls /sys/class/block | wc -l)" -lt "$devices" ] && [ ${#loops[@]} -lt 16 ]; do
    truncate -s 128M "$work/extra$extra.img"
    mkfs.btrfs -q -f -L "bench-extra$extra" "$work/extra$extra.img" >>"$logs/mkfs.log" 2>&1
    loops+=("$(losetup -f --show "$work/extra$extra.img")")
    extra=$((extra + 1))
done
[ "$extra" = 0 ] || say "$extra more loop devices (each a btrfs of its own): ${loops[*]:3}"
dd if="$work/clone-a.img" of="$work/superblock.bin" bs=4096 skip=16 count=1 status=none

mkdir -p "$work/run"
# loop devices are untrusted storage unless trusted (issue 18): named by the test build's seam
# (trusted_disk= takes by-path names, which udev makes for no loop device), so that the unique
# filesystem is scanned as on a disk; the boot names no disk (no EFI variables either)
: >"$work/bench.conf"
BTRFS_SCAN_GATE_TRUSTED_PATHS=$(IFS=:; echo "${loops[*]}")
export BTRFS_SCAN_GATE_TRUSTED_PATHS
echo "BOOT_IMAGE=/vmlinuz root=/dev/bench-none rw quiet" >"$work/cmdline"
mkdir -p "$work/efivars"
export BTRFS_SCAN_GATE_RUNDIR=$work/run BTRFS_SCAN_GATE_CONFIG=$work/bench.conf BTRFS_SCAN_GATE_CMDLINE=$work/cmdline \
    BTRFS_SCAN_GATE_EFIVARS=$work/efivars
for d in "${loops[@]}"; do "$H" udev "$d" >"$logs/helper-warm-${d##*/}.out" 2>&1; done
decision() { grep -m1 '^BTRFS_SCAN_GATE_DECISION=' "$logs/helper-warm-${1##*/}.out" | cut -d= -f2; }
# the measured events are `change` events: the device is read and (unique) handed to the kernel
# with the re-read check; an `add` of a device the inventory has would read nothing and ask nothing
export ACTION=change
say "helper decisions: $A $(decision "$A"), $B $(decision "$B"), $U $(decision "$U")"
nblock=$(ls /sys/class/block | wc -l)

# the commands compared (name|command line; hyperfine -N splits it like a shell)
cmds=(
    "helper-clone|$H udev $A"
    "helper-unique|$H udev $U"
    "btrfs-scan|btrfs device scan $A"
    "udevadm-builtin|udevadm test-builtin 'btrfs ready $A' /sys/class/block/${A##*/}"
    "ready-floor|$FLOOR $A"
)
cmd_of() { local c; for c in "${cmds[@]}"; do [ "${c%%|*}" = "$1" ] && { echo "${c#*|}"; return; }; done; }
names=(helper-clone helper-unique btrfs-scan udevadm-builtin ready-floor)

# ---- 1. instructions (callgrind) ----------------------------------------------------------------
# Total Ir of every process of the command: --dump-before=*fork zeroes the counters before a fork,
# so a child's profile holds only what it did after the fork; the sum over all parts is exact.
cg_total() { # NAME -> prints total Ir
    awk '/^summary:/ { s += $2 } END { print s + 0 }' "$out/cg/$1".*
}
declare -A ir wall wall_sd calls opens_dev reads_dev bytes_dev reads_target ioc_ctl ioc_all devbytes
say "1/4 callgrind per event"
for n in "${names[@]}"; do
    eval "set -- $(cmd_of "$n")"
    valgrind --tool=callgrind --dump-before='*fork' --callgrind-out-file="$out/cg/$n.%p" "$@" \
        >"$logs/cg-$n.out" 2>"$logs/cg-$n.log"
    ir[$n]=$(cg_total "$n")
done

# ---- 1b. wall time (hyperfine) ------------------------------------------------------------------
say "1/4 hyperfine per event"
hf=()
for n in "${names[@]}"; do hf+=(-n "$n" "$(cmd_of "$n")"); done
hyperfine -N --warmup 10 --runs 100 --export-csv "$out/hyperfine.csv" "${hf[@]}" >"$logs/hyperfine.log" 2>&1
# CSV: command,mean,stddev,median,user,system,min,max (seconds)
while IFS=, read -r name mean sd median rest; do
    [ "$name" = command ] && continue
    wall[$name]=$(awk -v m="$median" 'BEGIN { printf "%.0f", m * 1e6 }')
    wall_sd[$name]=$(awk -v s="$sd" 'BEGIN { printf "%.0f", s * 1e6 }')
done <"$out/hyperfine.csv"

# ---- 2. I/O (strace, block-device statistics) ---------------------------------------------------
say "2/4 strace per event"
is_dev='/dev/(loop|vd|sd|hd|xvd|nvme|mmcblk|zram|dm-|mapper/|md|bsg[0-9])'
sectors_read() { # DEV... -> total sectors read
    local d s=0
    for d in "$@"; do s=$((s + $(awk '{ print $3 }' "/sys/block/${d##*/}/stat"))); done
    echo "$s"
}
for n in "${names[@]}"; do
    eval "set -- $(cmd_of "$n")"
    target=$A
    [ "$n" = helper-unique ] && target=$U
    strace -f -c -o "$out/strace/$n.count" "$@" >/dev/null 2>"$logs/strace-c-$n.log"
    calls[$n]=$(awk '$NF == "total" { print $4 }' "$out/strace/$n.count")
    strace -ff -y -s 0 -e trace=open,openat,read,pread64,preadv2,ioctl -o "$out/strace/$n.trace" "$@" \
        >/dev/null 2>"$logs/strace-t-$n.log"
    # opens of block devices (any result), reads on block devices and their bytes (not the check after
    # a scan: a preadv2 with RWF_NOWAIT reads the page cache the kernel filled, never the device), ioctls
    read -r opens_dev[$n] reads_dev[$n] bytes_dev[$n] reads_target[$n] ioc_ctl[$n] ioc_all[$n] < <(
        cat "$out/strace/$n.trace".* | awk -v dev="$is_dev" -v t="$target" '
            $0 ~ "^open(at)?\\(.*\"" dev { o++ }
            $0 ~ "^p?read(64|v2)?\\([0-9]+<" dev && $0 !~ /RWF_NOWAIT/ {
                r++; v = $NF; if (v + 0 > 0) b += v
                if (index($0, "<" t ">")) rt++
            }
            /^ioctl\(/ { ia++; if (index($0, "</dev/btrfs-control>")) ic++ }
            END { print o + 0, r + 0, b + 0, rt + 0, ic + 0, ia + 0 }')
    # what the loop devices delivered (user and kernel reads), caches of these devices dropped
    # first; the least of 3 tries (other processes on a shared machine can only add reads)
    devbytes[$n]=
    for try in 1 2 3; do
        blockdev --flushbufs "$A" "$B" "$U"
        s0=$(sectors_read "$A" "$B" "$U")
        "$@" >/dev/null 2>&1
        b=$((($(sectors_read "$A" "$B" "$U") - s0) * 512))
        if [ -z "${devbytes[$n]}" ] || [ "$b" -lt "${devbytes[$n]}" ]; then devbytes[$n]=$b; fi
    done
done

# ---- 3. boot scaling (umockdev) -----------------------------------------------------------------
say "3/4 boot with 0, 10, 100, 1000 simulated devices (callgrind)"
declare -A bir bline
for N in 0 10 100 1000; do
    mkdir -p "$work/boot$N"
    umockdev-wrapper "$out/boot-testbed" "$N" "$work/superblock.bin" "$work/boot$N" -- \
        valgrind --tool=callgrind --dump-before='*fork' --callgrind-out-file="$out/cg/boot$N.%p" "$H" boot \
        >"$logs/boot$N.out" 2>"$logs/boot$N.log" || { say "boot N=$N failed:"; tail -n 5 "$logs/boot$N.log"; }
    bir[$N]=$(cg_total "boot$N")
    bline[$N]=$(grep '^boot-testbed:' "$logs/boot$N.out" | sed 's/^boot-testbed: //')
done
# syscalls of one boot (N=100): opens and preads of the simulated devices (paths are the testbed's;
# the fake control node's ioctls are answered through the preload's socket, counted by boot-testbed)
umockdev-wrapper "$out/boot-testbed" 100 "$work/superblock.bin" "$work/boot100s" -- \
    strace -ff -y -s 0 -e trace=open,openat,pread64 -o "$out/strace/boot100.trace" "$H" boot \
    >"$logs/boot100-strace.out" 2>"$logs/boot100-strace.log" || true
read -r boot_opens boot_preads < <(cat "$out/strace/boot100.trace".* | awk '
    /^open(at)?\(.*"[^"]*\/dev\/bsg[0-9]+"/ && !/= -1/ { o++ }
    /^pread64\([0-9]+<[^>]*\/dev\/bsg[0-9]+>/ { p++ }
    END { print o + 0, p + 0 }')
boot_ioctl=$(sed -n 's/.*scan_ioctls=\([0-9]*\).*/\1/p' "$logs/boot100-strace.out")

# ---- profiles for the findings: one event (one file per process, no dumps) and boot N=1000 ------
valgrind --tool=callgrind --callgrind-out-file="$out/cg/profile-udev.%p" "$H" udev "$U" \
    >"$logs/profile-udev.out" 2>"$logs/profile-udev.log"
for f in "$out"/cg/profile-udev.* "$out"/cg/boot1000.*; do
    echo "==== $f"
    callgrind_annotate --inclusive=yes --threshold=99 "$f" 2>"$logs/annotate.log" | sed -n '/^Ir/,/^-- Auto/p' | sed -n 1,60p || true
    echo "---- self"
    callgrind_annotate --threshold=95 "$f" 2>>"$logs/annotate.log" | sed -n '/^Ir/,/^-- Auto/p' | sed -n 1,30p || true
done >"$out/profile.txt"

# ---- 4. kernel ----------------------------------------------------------------------------------
kres=$out/kernel/results.txt
if [ "$kernel" = 1 ]; then
    say "4/4 kernel: patched 6.1 guest (bench/kernel/run.sh; log: $logs/kernel.log)"
    "$here/kernel/run.sh" "$out/kernel" >"$logs/kernel.log" 2>&1 || say "kernel part failed or skipped: $(tail -n 3 "$logs/kernel.log")"
fi

# ---- report -------------------------------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
{
    echo "Per event, loop devices on the host kernel ($(uname -r)); $nblock block devices in /sys/class/block."
    echo "Ratios against \`btrfs device scan\` of the same run. Ir: user-space instructions (callgrind),"
    echo "all processes; wall: hyperfine -N median of 100 runs (±: standard deviation; the machine is shared)."
    echo
    echo "| command | decision | Ir | Ir ratio | wall µs (±sd) | wall ratio | syscalls | dev opens | dev reads (target) | bytes read (user) | bytes from devices | ioctls btrfs-control (all) |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for n in "${names[@]}"; do
        case $n in
        helper-clone) dec=$(decision "$A") ;;
        helper-unique) dec=$(decision "$U") ;;
        *) dec=- ;;
        esac
        echo "| $n | $dec | ${ir[$n]} | $(ratio "${ir[$n]}" "${ir[btrfs-scan]}") | ${wall[$n]} (±${wall_sd[$n]}) | $(ratio "${wall[$n]}" "${wall[btrfs-scan]}") | ${calls[$n]} | ${opens_dev[$n]} | ${reads_dev[$n]} (${reads_target[$n]}) | ${bytes_dev[$n]} | ${devbytes[$n]} | ${ioc_ctl[$n]} (${ioc_all[$n]}) |"
    done
    echo
    echo "\`boot\` under umockdev (simulated devices: 2/10 clones, 7/10 unique, 1/10 not btrfs); Ir of all"
    echo "processes of the helper, preload included; marginal = (Ir(N) - Ir(0)) / N."
    echo
    echo "| devices | Ir | Ir/device | marginal Ir/device | testbed |"
    echo "|---:|---:|---:|---:|---|"
    for N in 0 10 100 1000; do
        if [ "$N" = 0 ]; then per=- marg=-; else
            per=$(awk -v a="${bir[$N]}" -v n="$N" 'BEGIN { printf "%.0f", a / n }')
            marg=$(awk -v a="${bir[$N]}" -v z="${bir[0]}" -v n="$N" 'BEGIN { printf "%.0f", (a - z) / n }')
        fi
        echo "| $N | ${bir[$N]} | $per | $marg | ${bline[$N]} |"
    done
    m10=$(awk -v a="${bir[10]}" -v z="${bir[0]}" 'BEGIN { print (a - z) / 10 }')
    m1000=$(awk -v a="${bir[1000]}" -v z="${bir[0]}" 'BEGIN { print (a - z) / 1000 }')
    echo
    echo "Ratio of Ir/device, 1000 vs 10 devices: raw $(ratio "$(awk -v a="${bir[1000]}" 'BEGIN { print a / 1000 }')" "$(awk -v a="${bir[10]}" 'BEGIN { print a / 10 }')"), marginal $(ratio "$m1000" "$m10") (1.00 = linear)."
    echo "One boot with 100 devices (strace): $boot_opens opens and $boot_preads preads of the simulated devices; $boot_ioctl scan ioctls (70 devices to scan)."
    echo
    if [ -s "$kres" ]; then
        echo "Kernel: patched 6.1 in QEMU (TCG), one boot; interleaved rounds (every order of the modes; unmounted devices forgotten before each timed mount)."
        echo "TCG on a shared machine is noisy: the minima show the uncontended cost, the medians the typical one."
        echo
        echo "| measurement | median µs | ratio of medians | min µs | ratio of minima | baseline |"
        echo "|---|---:|---:|---:|---:|---|"
        field() { grep -m1 "^RESULT $1 " "$kres" | sed -n "s/.* $2=\([0-9.]*\).*/\1/p"; }
        for s in mount+umount.plain mount+umount.virtual_fsid mount+umount.virtual_fsid.twin-mounted \
                 mount-only.plain mount-only.virtual_fsid scan.ioctl.normal scan.ioctl.skipped \
                 scan.btrfs-cmd.normal scan.btrfs-cmd.skipped; do
            case $s in
            mount+umount.*) base=mount+umount.plain ;;
            mount-only.*) base=mount-only.plain ;;
            scan.ioctl.*) base=scan.ioctl.normal ;;
            scan.btrfs-cmd.*) base=scan.btrfs-cmd.normal ;;
            esac
            med=$(field "$s" median_us) min=$(field "$s" min_us)
            echo "| $s | $med | $(ratio "$med" "$(field "$base" median_us)") | $min | $(ratio "$min" "$(field "$base" min_us)") | $base |"
        done
        n_k=$(grep -m1 '^RESULT mount+umount.plain ' "$kres" | sed -n 's/.* n=\([0-9]*\).*/\1/p')
        n_s=$(grep -m1 '^RESULT scan.ioctl.normal ' "$kres" | sed -n 's/.* n=\([0-9]*\).*/\1/p')
        echo
        echo "Rounds: $n_k mount, $n_s scan."
    elif [ "$kernel" = 1 ]; then
        echo "Kernel: no results (see $logs/kernel.log)."
    else
        echo "Kernel: left out (--no-kernel)."
    fi
    echo
    echo "Targets (reported, never gating):"
    t1=$(ratio "${ir[helper-unique]}" "${ir[btrfs-scan]}")
    t1c=$(ratio "${ir[helper-clone]}" "${ir[btrfs-scan]}")
    echo "- helper Ir <= btrfs device scan Ir: scan decision ${t1}x, skip decision ${t1c}x: $(awk -v a="$t1" -v b="$t1c" 'BEGIN { print (a <= 1 && b <= 1) ? "met" : "MISSED" }')"
    echo "- one superblock read per device: the event's device read ${reads_target[helper-unique]}x; $((reads_dev[helper-unique] - reads_target[helper-unique])) read(s) of other devices per event; boot: $boot_preads preads for 100 devices"
    echo "- at most one ioctl per device: scan decision ${ioc_ctl[helper-unique]}, skip decision ${ioc_ctl[helper-clone]} (on /dev/btrfs-control)"
    echo "- linear boot: marginal Ir/device 1000 vs 10: $(ratio "$m1000" "$m10")x: $(awk -v r="$(ratio "$m1000" "$m10")" 'BEGIN { print (r <= 1.10) ? "met (within 10%)" : "MISSED (superlinear)" }')"
    if [ -s "$kres" ]; then
        vr=$(grep -m1 '^RATIO mount+umount.virtual_fsid/plain=' "$kres" | cut -d= -f2)
        vm=$(ratio "$(field mount+umount.virtual_fsid min_us)" "$(field mount+umount.plain min_us)")
        echo "- virtual_fsid mount+umount within 1.1x of plain: medians ${vr}x, minima ${vm}x: $(awk -v r="$vr" 'BEGIN { print (r <= 1.10) ? "met" : "MISSED" }') (by the medians)"
    fi
    echo
    echo "Run took $(($(date +%s) - started)) s on $(date -u +%Y-%m-%d) ($(nproc) CPUs; load average $load_start at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end); raw data: $out."
} >"$res"
cat "$res"

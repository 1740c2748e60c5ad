#!/bin/bash
# bench/event-scaling.sh [--out DIR] [--sizes "10 100 1000"] [--no-coldplug]: what one udev event and a whole
# coldplug cost as the machine grows (issue 9's bars). A benchmark, not a test: it prints counts and
# ratios against the smallest size of the same run and never fails on a number.
#
# Each size N is a umockdev machine of N simulated block devices (bench/boot-testbed.c: 2/10
# clones, 7/10 unique, 1/10 not btrfs; fake control node, nothing reaches the host). Measured:
#   event    after `btrfs-scan-gate boot`, one `change` event of device 5 (a unique fs, scanned):
#            preads of simulated devices (strace) and instructions (callgrind, every process, the
#            umockdev preload included);
#   add      after `boot`, one `add` event of device 5 (coldplug: its entry is current);
#   whole    a mount changes an input of every decision: the next `change` event of device 5
#            (every event decides the whole set since the seal went; kept to compare with older runs);
#   coldplug-boot    `boot`, then one `add` event per device: preads in all, and the checks after
#                    each scan that read the page the kernel read with RWF_NOWAIT (no device read);
#   coldplug-noboot  no `boot` (no inventory yet), one `add` event per device: preads in all
#                    (and whether its skip list equals the boot's).
# --no-coldplug measures the three single events only (minutes less at N=1000).
# Needs root only for nothing; needs umockdev-wrapper, valgrind, strace, mkfs.btrfs (scripts/setup.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
out=/var/tmp/bench/events
sizes="10 100 1000"
coldplug=1
while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --no-coldplug) coldplug=0 ;;
    -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "event-scaling: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
for t in umockdev-wrapper valgrind strace mkfs.btrfs cmake make gcc pkg-config awk; do
    command -v "$t" >/dev/null || { echo "event-scaling: missing $t (scripts/setup.sh installs it)" >&2; exit 1; }
done
say() { echo "event-scaling: $*" >&2; }
rm -rf "$out"
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
logs=$out/logs

say "building (RelWithDebInfo; logs: $logs)"
cmake -S "$repo" -B "$out/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF >"$logs/cmake.log" 2>&1 ||
    { tail -n 20 "$logs/cmake.log"; exit 1; }
make -C "$out/build" -j2 btrfs-scan-gate-test >"$logs/make.log" 2>&1 || { tail -n 20 "$logs/make.log"; exit 1; }
H=$out/build/helper/btrfs-scan-gate-test # the test seams point it at the testbed
gcc -O2 -Wall -Wextra -Wno-unused-parameter -o "$out/boot-testbed" "$here/boot-testbed.c" \
    $(pkg-config --cflags --libs umockdev-1.0 gio-2.0) >"$logs/gcc.log" 2>&1 || { cat "$logs/gcc.log"; exit 1; }
truncate -s 256M "$out/fs.img"
mkfs.btrfs -q -f "$out/fs.img" >"$logs/mkfs.log" 2>&1
dd if="$out/fs.img" of="$out/superblock.bin" bs=4096 skip=16 count=1 status=none
rm -f "$out/fs.img"

# The script each testbed runs (under the preload; $1 = N, $2 = result dir, $3 = helper).
cat >"$out/in-testbed.sh" <<'EOF'
#!/bin/bash
set -u
n=$1 res=$2 H=$3 coldplug=$4
ev() { # ev ACTION INDEX CMD...: CMD with the udev environment of device INDEX's event
    local a=$1 i=$2; shift 2
    env ACTION="$a" SUBSYSTEM=block DEVTYPE=disk DEVNAME="$(printf /dev/bsg%04d "$i")" MAJOR=4000 MINOR="$i" "$@"
}
dev5=/dev/bsg0005
strace -f -y -s 0 -e trace=pread64,preadv2 -o "$res/boot.strace" "$H" --read-timeout 120 boot >"$res/boot.out" 2>&1
cp /sys/module/btrfs/parameters/skip_scan "$res/skip_scan.boot"
ev change 5 strace -f -y -s 0 -e trace=pread64,preadv2 -o "$res/event.strace" "$H" udev $dev5 >"$res/event.out" 2>&1
ev change 5 valgrind --tool=callgrind --dump-before='*fork' --callgrind-out-file="$res/event.cg.%p" "$H" udev $dev5 >/dev/null 2>>"$res/valgrind.log"
ev add 5 strace -f -y -s 0 -e trace=pread64,preadv2 -o "$res/add.strace" "$H" udev $dev5 >/dev/null 2>&1
ev add 5 valgrind --tool=callgrind --dump-before='*fork' --callgrind-out-file="$res/add.cg.%p" "$H" udev $dev5 >/dev/null 2>>"$res/valgrind.log"
# an input of every decision changes (a btrfs mount): the next event (every event decides the whole set)
printf '99 1 0:99 / /mnt rw - btrfs /dev/bsg0009 rw\n' >>"$BTRFS_SCAN_GATE_MOUNTINFO"
ev change 5 valgrind --tool=callgrind --dump-before='*fork' --callgrind-out-file="$res/whole.cg.%p" "$H" udev $dev5 >/dev/null 2>>"$res/valgrind.log"
[ "$coldplug" = 1 ] || exit 0
for i in $(seq 0 $((n - 1))); do
    ev add "$i" strace -f -y -s 0 -e trace=pread64,preadv2 -o "$res/cpb.strace.$i" "$H" udev "$(printf /dev/bsg%04d "$i")" >/dev/null 2>&1
done
rm -rf "$BTRFS_SCAN_GATE_RUNDIR" && mkdir -p "$BTRFS_SCAN_GATE_RUNDIR"
for i in $(seq 0 $((n - 1))); do
    # the first event reads every device: under strace and umockdev, 1000 reads can take longer than
    # the default 10 s read budget, and what the budget cuts off is read again by its own event
    ev add "$i" strace -f -y -s 0 -e trace=pread64,preadv2 -o "$res/cpn.strace.$i" "$H" --read-timeout 120 udev "$(printf /dev/bsg%04d "$i")" >"$res/cpn.out.$i" 2>&1
done
# the end state of the no-boot coldplug, next to the boot's
cp /sys/module/btrfs/parameters/skip_scan "$res/skip_scan.noboot"
EOF
chmod +x "$out/in-testbed.sh"

# superblock reads of the simulated devices: pread64, and preadv2 without RWF_NOWAIT (the check after a
# scan reads the page the kernel read with RWF_NOWAIT: from the page cache or not at all; checks() counts those)
preads() { cat "$@" 2>/dev/null | grep -E '^[0-9 ]*pread(64|v2)\([0-9]*</[^>]*/dev/bsg[0-9]*>' | grep -vc 'RWF_NOWAIT' || true; }
checks() { cat "$@" 2>/dev/null | grep -E '^[0-9 ]*preadv2\([0-9]*</[^>]*/dev/bsg[0-9]*>' | grep -c 'RWF_NOWAIT) = 4096' || true; }
cg_total() { awk '/^summary:/ { s += $2 } END { print s + 0 }' "$@"; }

declare -A ev_pr ev_ir add_pr add_ir cpb cpn
for n in $sizes; do
    say "N=$n"
    res=$out/n$n
    mkdir -p "$res"
    umockdev-wrapper "$out/boot-testbed" "$n" "$out/superblock.bin" "$res/work" -- "$out/in-testbed.sh" "$n" "$res" "$H" "$coldplug" \
        >"$logs/testbed$n.out" 2>"$logs/testbed$n.log" || { say "testbed N=$n failed:"; tail -n 5 "$logs/testbed$n.log"; }
    ev_pr[$n]=$(preads "$res"/event.strace*)
    add_pr[$n]=$(preads "$res"/add.strace*)
    ev_ir[$n]=$(cg_total "$res"/event.cg.*)
    add_ir[$n]=$(cg_total "$res"/add.cg.*)
    whole_ir[$n]=$(cg_total "$res"/whole.cg.*)
    cpb[$n]=- cpn[$n]=- cpc[$n]=-
    if [ "$coldplug" = 1 ]; then
        cpb[$n]=$(($(preads "$res"/boot.strace*) + $(preads "$res"/cpb.strace.*)))
        cpc[$n]=$(($(checks "$res"/boot.strace*) + $(checks "$res"/cpb.strace.*)))
        cpn[$n]=$(preads "$res"/cpn.strace.*)
    fi
    [ "$coldplug" = 0 ] || cmp -s "$res/skip_scan.boot" "$res/skip_scan.noboot" || say "N=$n: the skip list after a coldplug without boot differs from the boot's"
    grep -q '^BTRFS_SCAN_GATE_DECISION=scan$' "$res/event.out" || say "N=$n: the event of /dev/bsg0005 did not decide scan (see $res/event.out)"
done

base=${sizes%% *}
{
    echo "| devices | preads, one change event | Ir, one change event | Ir ratio vs N=$base | preads, one add event after boot | Ir, add event | Ir, first event after a mount (whole set) | coldplug after boot: preads (boot + N events) | cache checks after scans (RWF_NOWAIT) | coldplug without boot: preads (N events) |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for n in $sizes; do
        ratio=$(awk -v a="${ev_ir[$n]}" -v b="${ev_ir[$base]}" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
        printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "${ev_pr[$n]}" "${ev_ir[$n]}" "$ratio" \
            "${add_pr[$n]}" "${add_ir[$n]}" "${whole_ir[$n]}" "${cpb[$n]}" "${cpc[$n]}" "${cpn[$n]}"
    done
    echo
    echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) CPUs (load average $(cut -d' ' -f1-3 /proc/loadavg)); helper at $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown); raw data: $out."
} | tee "$out/results.md"

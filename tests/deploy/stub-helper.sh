#!/bin/sh
# Stand-in for `btrfs-scan-gate udev DEVNODE` in the rules tests: prints the contract's KEY=VALUE
# lines from a table the test writes ("DEVNODE DECISION SLOT BASE ACTIVE READY [REASON [TRUSTED]]" a
# line; REASON defaults to "stub", TRUSTED to 1), so the
# rules' plumbing is tested on its own. No kernel I/O. Usage: stub-helper.sh TABLE udev DEVNODE
table=$1
# a device without btrfs: the stub's storage is untrusted unless the table names it "trusted"
# ("withheld": a higher rank carries one of its names)
if [ "$2" = trust ]; then
    if grep -q "^$3 trusted\$" "$table"; then echo "BTRFS_SCAN_GATE_TRUSTED=1"; else echo "BTRFS_SCAN_GATE_TRUSTED=0"; fi
    if grep -q "^$3 withheld\$" "$table"; then echo "BTRFS_SCAN_GATE_WITHHELD=1"; fi
    exit 0
fi
[ "$2" = udev ] || { echo "btrfs-scan-gate: stub: usage: TABLE udev|trust DEVNODE" >&2; exit 2; }
dev=$3
while read -r node decision slot base active ready reason trusted; do
    [ "$node" = "$dev" ] || continue
    echo "BTRFS_SCAN_GATE_DECISION=$decision"
    echo "BTRFS_SCAN_GATE_REASON=${reason:-stub}"
    echo "BTRFS_SCAN_GATE_FSID=${ID_FS_UUID:-}"
    echo "BTRFS_SCAN_GATE_SLOT=$slot"
    echo "BTRFS_SCAN_GATE_SLOT_BASE=$base"
    echo "BTRFS_SCAN_GATE_SLOT_ACTIVE=$active"
    echo "ID_BTRFS_READY=$ready"
    echo "BTRFS_SCAN_GATE_TRUSTED=${trusted:-1}"
    if [ "$active" = 0 ]; then
        echo "UDISKS_IGNORE=1"
        echo "BTRFS_SCAN_GATE_UDISKS_IGNORE=1"
    fi
    exit 0
done < "$table"
echo "BTRFS_SCAN_GATE_DECISION=ignore"
echo "BTRFS_SCAN_GATE_REASON=not-btrfs"

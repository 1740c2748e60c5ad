# Mutant (issue 19, bug 3): device_list_add() registers a device with CHANGING_FSID or
# CHANGING_FSID_V2 set again (the heuristics that matched it to other filesystems stay removed).
# Expected to fail: patched-metadata-uuid-stick (the crafted stick's scan succeeds, no refusal
# line), patched-refusals (vde mounts).
sed -i 's/^\tif (btrfs_super_flags(disk_super) & (BTRFS_SUPER_FLAG_CHANGING_FSID |$/\tif (0 \&\& btrfs_super_flags(disk_super) \& (BTRFS_SUPER_FLAG_CHANGING_FSID |/' volumes.c

# Mutant: BTRFS_IOC_DEVICES_READY of a skip_scan-listed device answers "ready" (0) without
# reading the superblock (v2), so udev mounts one member of a multi-device filesystem.
# Expected to fail: patched-skip-scan-ready.
sed -i 's/^\t\tif (cmd == BTRFS_IOC_DEVICES_READY)$/\t\tif (0)/' super.c

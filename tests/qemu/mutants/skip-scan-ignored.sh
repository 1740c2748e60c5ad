# Mutant: the control ioctl never consults skip_scan, so listed devices are registered by
# non-mount scans. Expected to fail: patched-clones-and-skip-scan, patched-skip-scan-semantics.
sed -i 's/^\t    !btrfs_mounted_needs_device(path, devt) \&\& btrfs_skip_scan(path)) {$/\t    !btrfs_mounted_needs_device(path, devt) \&\& false) {/' super.c

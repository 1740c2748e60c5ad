# Mutant (issue 19, bug 1): skip_scan is consulted before the check for a device open in a
# mounted filesystem (v3), so such a device is neither renamed nor answered ready.
# Expected to fail: patched-skip-scan-mounted.
sed -i 's/^\t    !btrfs_mounted_needs_device(path, devt) \&\& btrfs_skip_scan(path)) {$/\t    btrfs_skip_scan(path)) {/' super.c

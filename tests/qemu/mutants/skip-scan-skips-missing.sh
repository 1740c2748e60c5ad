# Mutant: skip_scan skips a listed member that a degraded mount misses (the superblock check
# of btrfs_mounted_needs_device() is taken out). Expected to fail: patched-skip-scan-degraded.
sed -i 's/^\t\t\tneeded = missing_in_mounted(disk_super);$/\t\t\tneeded = false;/' volumes.c

# Mutant: -o virtual_fsid still refuses a filesystem whose dev_replace item is STARTED, no longer
# one whose item is SUSPENDED (written by an unmount during the replace).
# Expected to fail: patched-replace-refusals (its suspended step).
sed -i 's/^\t\tif (fs_info->fs_devices->virtual_fsid) {$/\t\tif (dev_replace->replace_state == BTRFS_IOCTL_DEV_REPLACE_STATE_STARTED \&\& fs_info->fs_devices->virtual_fsid) {/' dev-replace.c

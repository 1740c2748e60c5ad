# Mutant: -o virtual_fsid no longer refuses a filesystem whose dev_replace item is STARTED or
# SUSPENDED (the check in btrfs_init_dev_replace() is taken out).
# Expected to fail: patched-replace-refusals.
sed -i 's/^\t\tif (fs_info->fs_devices->virtual_fsid) {$/\t\tif (0 \&\& fs_info->fs_devices->virtual_fsid) {/' dev-replace.c

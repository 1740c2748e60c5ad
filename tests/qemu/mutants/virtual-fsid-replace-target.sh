# Mutant: -o virtual_fsid no longer refuses the target of an unfinished device replace (the
# devid 0 check of alloc_virtual_fs_devices() is taken out).
# Expected to fail: patched-replace-refusals.
sed -i 's/^\t\t BTRFS_DEV_REPLACE_DEVID)$/\t\t BTRFS_DEV_REPLACE_DEVID \&\& 0)/' volumes.c

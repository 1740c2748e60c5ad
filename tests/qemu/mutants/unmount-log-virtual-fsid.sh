# Mutant: the "last unmount" line names the in-memory fsid again (the random one of a
# virtual_fsid mount) instead of the on-disk fsid its "first mount" line names.
# Expected to fail: patched-sysfs-and-logs.
sed -i 's/^\t\t   btrfs_ondisk_fsid(fs_info->fs_devices));$/\t\t   fs_info->fs_devices->fsid);/' super.c

# Mutant: sb->s_uuid is the random in-memory fsid of a virtual_fsid mount again (v2), so it
# changes at every mount and overlayfs (index=on) refuses its upper layer ("failed to verify
# upper root origin"). Expected to fail: patched-overlay-index.
sed -i 's/memcpy(&sb->s_uuid, btrfs_ondisk_fsid(fs_info->fs_devices),/memcpy(\&sb->s_uuid, fs_info->fs_devices->fsid,/' disk-io.c

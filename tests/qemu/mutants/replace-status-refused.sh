# Mutant: btrfs replace status is refused with EINVAL on a virtual_fsid mount (v2 refused every
# replace command). Expected to fail: patched-refusals.
sed -i 's/^\tcase BTRFS_IOCTL_DEV_REPLACE_CMD_STATUS:$/&\n\t\tif (fs_info->fs_devices->virtual_fsid) {\n\t\t\tret = -EINVAL;\n\t\t\tbreak;\n\t\t}/' ioctl.c

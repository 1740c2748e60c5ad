# Mutant: mount -o remount,virtual_fsid of a plain mount succeeds and changes nothing (v2).
# Expected to fail: patched-refusals.
sed -i 's/^\t\t\tif (!info->fs_devices->virtual_fsid) {$/\t\t\tif (0) {/' super.c

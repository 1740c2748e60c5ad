# Mutant: a plain mount of a copy of a mounted virtual_fsid filesystem is no longer refused
# (the check of the device's on-disk fsid, devid and device uuid is taken out).
# Expected to fail: patched-same-device-joins, patched-loop-twin, patched-twin-registered-first.
sed -i 's/^\tif (!device->fs_devices->virtual_fsid \&\& !device->fs_devices->opened \&\&$/\tif (0 \&\& !device->fs_devices->virtual_fsid \&\& !device->fs_devices->opened \&\&/' super.c

# Mutant (issue 19, bug 4): -o virtual_fsid of a device open in a plain mount joins that mount
# (v3 logged "virtual_fsid ignored") instead of being refused as the remount is.
# Expected to fail: patched-same-device-joins.
sed -i 's/^\t\t\t\tdevice = ERR_PTR(-EINVAL);$/\t\t\t\tdevice = rename_joined_device(device, path);/' volumes.c

# Mutant: a device with CHANGING_FSID_V2 is refused by every scan again, a mount's included
# (what upstream 197a9ecee68a does; on 6.1 the mount is the only way back for such a filesystem).
# Expected to fail: patched-fsid-change-mounts.
sed -i 's/^\tif (fsid_change_in_progress \&\& !mount_arg_dev) {$/\tif (fsid_change_in_progress) {/' volumes.c

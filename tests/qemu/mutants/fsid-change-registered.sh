# Mutant (issue 19, bug 3): device_list_add() registers a device with CHANGING_FSID or
# CHANGING_FSID_V2 set again (the heuristics that matched it to other filesystems stay removed).
# Expected to fail: patched-metadata-uuid-stick (the crafted stick's scan succeeds, no refusal
# line), patched-refusals (vde mounts).
sed -i 's/^\tif (fsid_change_in_progress \&\& !mount_arg_dev) {$/\tif (0) {/' volumes.c

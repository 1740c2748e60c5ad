# Mutant: statfs' f_fsid of a virtual_fsid mount comes from the on-disk fsid alone, so two
# mounted clones report the same f_fsid. Expected to fail: patched-overlay-index.
sed -i 's/new_encode_dev(fs_info->fs_devices->latest_dev->devt);/0;/' super.c

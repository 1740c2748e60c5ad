# Mutant: btrfs_open_one_device() keeps the dev_t cached at scan time (stock 6.1, before
# upstream 9f7eb8405dcb). Expected to fail: hardening-devt-change.
sed -i 's/^\t\tdevice->devt = bdev->bd_dev;$/\t\t;/' volumes.c

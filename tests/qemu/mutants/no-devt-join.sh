# Mutant: device_list_add() no longer looks for an opened device by dev_t, so the same block
# device mounted again with virtual_fsid becomes a second, independent instance writing the
# same disk (the flaw that made upstream reject the 2023 RFC). Expected to fail:
# patched-clones-and-skip-scan, patched-same-device-joins.
sed -i 's/device = join_opened_device(path_devt, path, virtual_fsid);/device = NULL;/' volumes.c

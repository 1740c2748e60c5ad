# Mutant: device_list_add() no longer looks for an opened device by dev_t, so the same block
# device mounted again with virtual_fsid becomes a second, independent instance writing the
# same disk (the flaw that made upstream reject the 2023 RFC). Expected to fail:
# patched-clones-and-skip-scan, patched-same-device-joins.
sed -i 's/device = find_opened_device_by_devt(path_devt);/device = NULL;/' volumes.c

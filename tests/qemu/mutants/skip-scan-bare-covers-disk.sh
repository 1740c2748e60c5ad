# Mutant (issue 19, bug 6, v4 patch 11): every whole-disk path entry covers the disk's partitions,
# also one without the trailing '*', so a disk the helper lists bare (a stale whole-disk superblock
# beside its partitions) keeps its partitions from being registered. Expected to fail:
# patched-skip-scan-wholedisk.
sed -i 's/(disk && entry_devt == whole)/entry_devt == whole/' super.c

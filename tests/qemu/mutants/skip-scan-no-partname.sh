# Mutant: PARTUUID=/PARTLABEL= entries never match (the partition metadata is not looked at).
# Expected to fail: patched-skip-scan-partname.
sed -i 's/^\tinfo = bdev->bd_meta_info;$/\tinfo = NULL;/' super.c

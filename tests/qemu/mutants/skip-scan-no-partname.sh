# Mutant: PARTUUID=/PARTLABEL= entries never match (the partition metadata is not looked at).
# Expected to fail: patched-skip-scan-partname.
sed -i 's/^\t\tinfo = bdev->bd_meta_info;$/\t\tinfo = NULL;/' super.c

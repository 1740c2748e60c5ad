# Mutant: the 4095-byte limit counts the newline echo adds (v2), so `echo LIST >skip_scan` of a
# 4095-byte list is refused. Expected to fail: patched-skip-scan-semantics.
sed -i 's/size_t len = strnlen(val, BTRFS_SKIP_SCAN_MAX + 2);/size_t len = strnlen(val, BTRFS_SKIP_SCAN_MAX + 1);\n\tbool long_value = len > BTRFS_SKIP_SCAN_MAX;/; s/^\tif (len > BTRFS_SKIP_SCAN_MAX) {$/\tif (long_value || len > BTRFS_SKIP_SCAN_MAX) {/' super.c

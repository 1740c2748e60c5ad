# Mutant: every skipped scan logs its line (v2), so a scan loop floods the log. Expected to
# fail: patched-skip-scan-semantics.
sed -i 's/btrfs_info_rl(NULL,$/btrfs_info(NULL,/' super.c

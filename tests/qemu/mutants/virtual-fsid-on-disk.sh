# Mutant: each superblock write of a virtual_fsid mount stores the in-memory (virtual) fsid as the
# on-disk fsid, after the write-time validation, so the clone's identity is silently rewritten.
# Expected to fail: tests/qemu/hardening/crash-safety.sh (not a case file, so not in ./expect):
#   BSG_MUTANT=virtual-fsid-on-disk tests/qemu/hardening/crash-safety.sh --mode sigkill
sed -i 's/^\t\tbtrfs_set_super_bytenr(sb, bytenr_orig);$/&\n\t\tmemcpy(sb->fsid, device->fs_devices->fsid, BTRFS_FSID_SIZE);/' disk-io.c

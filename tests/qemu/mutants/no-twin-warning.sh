# Mutant (issue 19, documentation item): no warning when a plain registration takes the on-disk
# fsid of a mounted virtual_fsid filesystem. Expected to fail: patched-same-device-joins.
sed -i 's/^\t\twarn_virtual_twin(path, disk_super->fsid);$/\t\t;/' volumes.c

# Mutant (issue 19, bug 6): a path entry matches only the device it names, not the partitions of
# a listed whole disk (v3). Expected to fail: patched-skip-scan-wholedisk.
sed -i 's/(entry_devt == devt || entry_devt == whole))/entry_devt == devt)/' super.c

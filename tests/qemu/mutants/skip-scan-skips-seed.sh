# Mutant: skip_scan no longer looks at the seeds of mounted sprouts: a listed seed is skipped
# and its registration forgotten while its sprout is mounted. Expected to fail:
# patched-skip-scan-seed.
sed -i 's/^\t\t\tif (devt_opened_in(seed_devs, devt))$/\t\t\tif (0 \&\& devt_opened_in(seed_devs, devt))/' volumes.c

# Mutant: device= together with virtual_fsid is no longer refused (v2): the device= path is
# scanned under its on-disk fsid and the mount fails with EEXIST when the clone is mounted.
# Expected to fail: patched-device-option.
sed -i 's/if (!error && pass == 0 && \*virtual_fsid && have_device) {/if (0) {/' super.c

# Mutant: a device joined by dev_t keeps its old name after a scan under a new one, so a root
# mounted as /dev/root keeps that name (kernel bugzilla 218353's symptom). Expected to fail:
# hardening-rescan-rename.
sed -i 's/device = rename_joined_device(device, path);/;/' volumes.c

# Mutant: join_opened_device() walks the device lists of mounted filesystems holding only
# uuid_mutex (v2), racing device remove and replace. A race: patched-devt-walk-stress is the
# case that can see it (a walk over a freed device faults under slub_debug=FZP); measured below.
perl -0pi -e 's/(\t\tif \(!fs_devices->opened\)\n\t\t\tcontinue;\n)\t\tmutex_lock\(&fs_devices->device_list_mutex\);\n/$1/; s/(\t\t\t\tdevice = NULL;\n\t\t\t\}\n)\t\t\tmutex_unlock\(&fs_devices->device_list_mutex\);\n/$1/; s/(\t\t\}\n)\t\tmutex_unlock\(&fs_devices->device_list_mutex\);\n(\t\}\n\treturn NULL;)/$1$2/; s/\tlockdep_assert_held\(&device->fs_devices->device_list_mutex\);\n//' volumes.c

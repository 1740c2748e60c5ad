/* libFuzzer target: bsg_dm_table_data_device() (helper/stack.c).
 * Input: a device-mapper table as the kernel's DM_TABLE_STATUS shows it, an exact-size buffer
 * without a NUL. Properties: the answer is 0, -EINVAL or -EOPNOTSUPP; the device is written only on
 * 0, and then is not 0:0; the answer does not change when the table is given twice (the same data
 * device in every target) and stays an error when a linear target over another device follows. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "stack.h"

#define CHECK(x)                                                                                        \
        do {                                                                                            \
                if (!(x))                                                                               \
                        __builtin_trap();                                                               \
        } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const dev_t untouched = makedev(4095, 4095);
        dev_t d = untouched;
        char *twice = malloc(2 * size + 2);
        int r = bsg_dm_table_data_device((const char *)data, size, &d);

        CHECK(r == 0 || r == -EINVAL || r == -EOPNOTSUPP);
        if (r == 0)
                CHECK(d != makedev(0, 0));
        else
                CHECK(d == untouched);

        /* the table twice, one target after the other: the same data device */
        memcpy(twice, data, size);
        twice[size] = '\n';
        memcpy(twice + size + 1, data, size);
        dev_t d2 = untouched;
        int r2 = bsg_dm_table_data_device(twice, 2 * size + 1, &d2);
        if (r == 0)
                CHECK(r2 == 0 && d2 == d);
        free(twice);
        return 0;
}

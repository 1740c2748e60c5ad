/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pure: which device a device-mapper table stores its data on (issue 18 case 10). A dm-verity device
 * has two slaves (the data and the hash tree): only the data device is the storage the verity device
 * stands for, so only it gives the slot and the disk. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* TABLE is the kernel's table status (DM_TABLE_STATUS with DM_STATUS_TABLE_FLAG), one line per target:
 * "TARGET_TYPE PARAMS", devices as "MAJ:MIN". The data device of each target: linear's and
 * integrity's first parameter, verity's second (after the version), crypt's fourth (after cipher,
 * key, IV offset). Returns 0 and *RET_DEVNUM when every target stores its data on one and the same
 * device; -EINVAL when the targets name different devices or a parameter is malformed; -EOPNOTSUPP
 * when a target type is not one of those (no data device is guessed: fail closed, no slot). */
int bsg_dm_table_data_device(const char *table, size_t len, dev_t *ret_devnum);

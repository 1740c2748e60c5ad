/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Messages where people look: udev logs a program's stderr only at debug level, so every error and
 * every changed decision also goes to the journal, tagged "btrfs-scan-gate": through syslog(3) on a
 * running system, to /dev/kmsg in an initramfs (no syslog socket there; journald reads kmsg later).
 * BTRFS_SCAN_GATE_LOG=auto (default) | syslog | kmsg | stderr (stderr only) chooses the sink. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

enum bsg_log_sink { BSG_LOG_STDERR, BSG_LOG_SYSLOG, BSG_LOG_KMSG };

/* The sink: from the value of BTRFS_SCAN_GATE_LOG (NULL, "auto" or unknown: kmsg in an initramfs,
 * syslog elsewhere). Pure. */
enum bsg_log_sink bsg_log_pick_sink(const char *env, bool in_initrd);

/* Writes one line, "<msg>", at syslog LEVEL to the journal sink (and nothing to stderr). */
void bsg_log_journal(int level, const char *msg);

/* One line per changed decision: the first decision for DEVNUM, or one that differs from the last one
 * logged (remembered under RUNDIR/logged/), goes to the journal as
 * "DEVNODE: DECISION (REASON), fsid FSID, TRUST". FSID may be NULL; TRUST (may be NULL) says whether
 * the device is trusted storage and where trust came from ("trusted (on the disk that booted)").
 * Returns 1 if logged, 0 if unchanged. */
int bsg_log_decision(const char *rundir, dev_t devnum, const char *devnode, const char *decision,
                     const char *reason, const char *fsid, const char *trust);

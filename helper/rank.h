/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Who takes part when devices collide (pure). Trust does not decide whether a device takes part: a
 * device that collides with nothing is scanned and linked as with systemd's rules. It arbitrates
 * collisions: devices collide when the kernel would take them for one filesystem (same_filesystem())
 * or when they carry the same /dev/disk name (by-uuid, by-label, by-partuuid, by-partlabel), and only
 * the highest rank of a collision takes part. Names the system mounts by are reserved for trusted
 * storage: hot-pluggable media carrying one loses whether or not the trusted device is present. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

/* The names the system mounts by: root=, rootflags=device=, the sources of /etc/fstab, /etc/crypttab
 * and the .mount and .swap units of /etc/systemd/system, RAUC's slot devices, SteamOS's partsets. */
struct bsg_reserved_name {
        enum bsg_name_kind kind;
        char *value;
};
struct bsg_reserved {
        struct bsg_reserved_name *v;
        size_t n;
        bool lost; /* a source could not be read or kept: every name a device carries may be one */
};

/* Adds SPEC when it is a name a device carries: UUID=, LABEL=, PARTUUID=, PARTLABEL= or a
 * /dev/disk/by-{uuid,label,partuuid,partlabel}/ link (udev's \xHH escapes undone). Returns 1 when
 * added, 0 when SPEC names no such thing (a kernel name, by-path, a network source), -ENOMEM. */
int bsg_reserved_add(struct bsg_reserved *r, const char *spec);
/* Adds the source of every line of TEXT, an fstab (the first field, and every device= of its btrfs
 * options) or a crypttab (the second field). Returns 0 or -ENOMEM. */
int bsg_reserved_add_tab(struct bsg_reserved *r, const char *text, bool crypttab);
/* Adds the What= of a systemd .mount or .swap unit's TEXT. Returns 0 or -ENOMEM. */
int bsg_reserved_add_unit(struct bsg_reserved *r, const char *text);
/* Adds every device= of a btrfs mount option string (rootflags=). Returns 0 or -ENOMEM. */
int bsg_reserved_add_options(struct bsg_reserved *r, const char *options);
void bsg_reserved_free(struct bsg_reserved *r);
/* Whether A and B are one name of KIND, each as udev stores it (\xHH escapes) or decoded; UUIDs
 * ignore case. */
bool bsg_name_equal(enum bsg_name_kind kind, const char *a, const char *b);
/* Whether D carries one of R's names (any name, when R is lost). */
bool bsg_reserved_has(const struct bsg_reserved *r, const struct bsg_device *d);

/* The one rank and collision rule: RET_OUTRANKED[i] is set for every device of DEVS that is not in
 * use (mounted) and that a device of a higher rank collides with, that is hot-pluggable and carries a
 * reserved name (D->reserved), or that is below trusted and carries the fsid of a mounted filesystem.
 * N entries. Returns 0 or -ENOMEM (then every device below trusted is outranked: fail closed). */
int bsg_outranked(const struct bsg_device *devs, size_t n, bool *ret_outranked);

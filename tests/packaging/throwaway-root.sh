#!/bin/bash
# throwaway-root.sh: prints the path of a Debian 12 root tarball (mmdebstrap, minbase) with what the
# packages need around them: udev and btrfs-progs (the owners of the diverted rules),
# initramfs-tools (the trigger), dkms, linux-source-6.1, patch, xz-utils (the dkms package's
# dependencies). Cached under $BSG_CACHE/roots/, keyed by that list; rebuilt after 7 days (the
# archive moves). Concurrent callers wait on a lock.
set -euo pipefail
cache=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
include=udev,btrfs-progs,initramfs-tools,dkms,linux-source-6.1,patch,xz-utils
key=$(printf 'bookworm minbase %s\n' "$include" | sha256sum | cut -c1-16)
tarball=$cache/roots/bookworm-$key.tar
mkdir -p "$cache/roots" "$cache/locks"
exec 9>"$cache/locks/root-$key"
flock -w 1800 9 || { echo "throwaway-root: timed out waiting for the lock" >&2; exit 1; }
if [ -s "$tarball" ] && [ -z "$(find "$tarball" -mtime +7)" ]; then
    echo "$tarball"
    exit 0
fi
command -v mmdebstrap >/dev/null || { echo "throwaway-root: mmdebstrap not installed (scripts/setup.sh)" >&2; exit 1; }
tmp=$(mktemp -d "$cache/roots/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
if ! TMPDIR=$tmp mmdebstrap --variant=minbase --include="$include" bookworm "$tmp/root.tar" \
        >"$tmp/mmdebstrap.log" 2>&1; then
    tail -n 30 "$tmp/mmdebstrap.log" >&2
    echo "throwaway-root: mmdebstrap failed" >&2
    exit 1
fi
mv "$tmp/root.tar" "$tarball"
echo "throwaway-root: $tarball made in $(( $(date +%s) - start )) s" >&2
echo "$tarball"

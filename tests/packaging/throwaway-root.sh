#!/bin/bash
# throwaway-root.sh: a throw-away Debian 12 root (mmdebstrap, minbase) with what the packages need
# around them: udev and btrfs-progs (the owners of the diverted rules), initramfs-tools (the
# trigger), dkms, linux-source-6.1, patch, xz-utils (the dkms package's dependencies).
#   throwaway-root.sh
#       prints the path of its tarball, cached under $BSG_CACHE/roots/, keyed by that list; rebuilt
#       after 7 days (the archive moves). Concurrent callers wait on a lock.
#   throwaway-root.sh unpack ROOT [--own-mount] [--sys] [--archive]
#       for a test that chroots into it, in the test's private mount namespace (`unshare -m`; the
#       mounts below must not reach this machine's): ROOT made anew from the tarball, then /proc,
#       /dev (this machine's, rbind) and a tmpfs /run mounted in it. --own-mount: ROOT a mount point
#       of its own first (`unshare --propagation private` in the root needs one); --sys: this
#       machine's /sys (rbind); --archive: the archive as this machine sees it (its
#       sources and lists: no apt-get update), downloads kept in $BSG_CACHE/apt-archives.
#   throwaway-root.sh remove ROOT
#       unmounts everything mounted under ROOT, deepest first, then deletes it; deletes nothing
#       while a mount is left (a bind mount of a cache would be emptied with it).
set -euo pipefail
cache=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
include=udev,btrfs-progs,initramfs-tools,dkms,linux-source-6.1,patch,xz-utils
key=$(printf 'bookworm minbase %s\n' "$include" | sha256sum | cut -c1-16)
tarball=$cache/roots/bookworm-$key.tar

make_tarball() { # prints the tarball's path, made first if missing or old
    mkdir -p "$cache/roots" "$cache/locks"
    exec 9>"$cache/locks/root-$key"
    flock -w 1800 9 || { echo "throwaway-root: timed out waiting for the lock" >&2; exit 1; }
    if [ -s "$tarball" ] && [ -z "$(find "$tarball" -mtime +7)" ]; then
        echo "$tarball"
        return 0
    fi
    command -v mmdebstrap >/dev/null || { echo "throwaway-root: mmdebstrap not installed (scripts/setup.sh)" >&2; exit 1; }
    local start
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
    rm -rf "$tmp"
    trap - EXIT
    echo "throwaway-root: $tarball made in $(( $(date +%s) - start )) s" >&2
    echo "$tarball"
}

mounts_under() { # ROOT: the mount points at or below ROOT, deepest first
    findmnt -rn -o TARGET | sed 's/\\x20/ /g' | awk -v r="$1" '$0 == r || index($0, r "/") == 1' | sort -r
}

remove() { # ROOT
    local root m
    root=$(realpath -m "$1")
    [ -e "$root" ] || return 0
    while read -r m; do
        [ -n "$m" ] || continue
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done < <(mounts_under "$root")
    if [ -n "$(mounts_under "$root")" ]; then
        echo "throwaway-root: still mounted under $root, not deleted:" >&2
        mounts_under "$root" >&2
        exit 1
    fi
    rm -rf --one-file-system "$root"
}

unpack() { # ROOT [--own-mount] [--sys] [--archive]
    local root own=0 sys=0 archive=0 t a
    root=$(realpath -m "$1")
    shift
    for a in "$@"; do
        case $a in
        --own-mount) own=1 ;;
        --sys) sys=1 ;;
        --archive) archive=1 ;;
        *) echo "throwaway-root: unpack: unknown option $a" >&2; exit 2 ;;
        esac
    done
    t=$(make_tarball)
    remove "$root"
    mkdir -p "$root"
    tar -C "$root" -xf "$t"
    mount --make-rprivate /
    [ "$own" = 0 ] || mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    [ "$sys" = 0 ] || mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs -o mode=0755 bsg-run "$root/run"
    if [ "$archive" = 1 ]; then
        [ -e /etc/apt/sources.list.d/debian.sources ] ||
            { echo "throwaway-root: no /etc/apt/sources.list.d/debian.sources to give the root the archive" >&2; exit 1; }
        rm -f "$root/etc/apt/sources.list"
        cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
        cp /var/lib/apt/lists/*_dists_* "$root/var/lib/apt/lists/"
        cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
        mkdir -p "$cache/apt-archives/partial"
        mount --bind "$cache/apt-archives" "$root/var/cache/apt/archives"
    fi
}

case ${1:-} in
"") make_tarball ;;
unpack) [ $# -ge 2 ] || { echo "usage: throwaway-root.sh unpack ROOT [--own-mount] [--sys] [--archive]" >&2; exit 2; }
    shift; unpack "$@" ;;
remove) [ $# -eq 2 ] || { echo "usage: throwaway-root.sh remove ROOT" >&2; exit 2; }
    remove "$2" ;;
*) echo "usage: throwaway-root.sh [unpack ROOT [--own-mount] [--sys] [--archive] | remove ROOT]" >&2; exit 2 ;;
esac

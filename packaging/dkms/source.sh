#!/bin/bash
# source.sh: fs/btrfs of an installed Debian 6.1 kernel's own version. The patched module has to be
# that kernel's btrfs plus the series, so the source must be linux-source-6.1 of exactly the
# kernel's package version. btrfs-scan-gate-dkms ships fs/btrfs of the linux-source-6.1 it was
# built with beside this script (linux-btrfs-VERSION.tar.xz); other versions are kept by the
# administrator in the cache (`keep`). A module build never downloads anything.
#
#   source.sh version KVER      the package version of KVER (its installed linux-image-KVER,
#                               linux-image-KVER-unsigned or linux-headers-KVER; they must agree)
#   source.sh check KVER        exit 0 if fs/btrfs of KVER's version is here (shipped or kept), else
#                               say why on stderr and exit 1
#   source.sh extract KVER DIR  fs/btrfs and Documentation/filesystems/btrfs.rst of KVER's version
#                               into DIR (shipped or kept; nothing is downloaded)
#   source.sh fetch KVER DIR    the same from the installed linux-source-6.1 if it has the version,
#                               else from `apt-get download linux-source-6.1=VERSION` (about 140 MB,
#                               of which about 1 MB is kept): for build machines and for `keep`
#   source.sh keep KVER         fetch, and keep fs/btrfs of KVER's version in the cache, so that dkms
#                               can build for KVER (run by hand; then `dkms autoinstall`)
#
# Test seams: BSG_LINUX_SOURCE_TARBALL (/usr/src/linux-source-6.1.tar.xz), BSG_DKMS_SOURCE_CACHE
# (/var/cache/btrfs-scan-gate-dkms), BSG_APT_ARCHIVES (/var/cache/apt/archives); dpkg-query and
# apt-get from PATH.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tarball=${BSG_LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
cache=${BSG_DKMS_SOURCE_CACHE:-/var/cache/btrfs-scan-gate-dkms}
archives=${BSG_APT_ARCHIVES:-/var/cache/apt/archives}
members=('linux-source-6.1/fs/btrfs/*' 'linux-source-6.1/Documentation/filesystems/btrfs.rst')
say() { echo "btrfs-scan-gate-dkms: $*" >&2; }

installed_version() { # PACKAGE: its version if it is installed, else nothing
    { dpkg-query -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null || true; } |
        awk '$1 == "installed" { print $2 }'
}

kernel_version() { # KVER: prints its package version, or says why there is none (exit 1)
    local kver=$1 pkg v ver='' from=''
    case $kver in
    6.1.*) ;;
    *) say "kernel $kver is not a 6.1 kernel: the patch series is for Linux 6.1 only"; return 1 ;;
    esac
    for pkg in "linux-image-$kver" "linux-image-$kver-unsigned" "linux-headers-$kver"; do
        v=$(installed_version "$pkg")
        [ -n "$v" ] || continue
        if [ -z "$ver" ]; then
            ver=$v from=$pkg
        elif [ "$v" != "$ver" ]; then
            say "$pkg is version $v but $from is $ver: the headers must be those of the kernel's own version (install $pkg=$ver)"
            return 1
        fi
    done
    [ -n "$ver" ] || { say "no installed linux-image-$kver or linux-headers-$kver package: cannot tell the kernel's version"; return 1; }
    echo "$ver"
}

have() { # VERSION: prints the tarball holding its fs/btrfs, shipped or kept
    local f
    for f in "$here/linux-btrfs-$1.tar.xz" "$cache/linux-btrfs-$1.tar.xz"; do
        [ ! -s "$f" ] || { echo "$f"; return 0; }
    done
    return 1
}

check() { # KVER
    local kver=$1 ver
    ver=$(kernel_version "$kver") || return 1
    have "$ver" >/dev/null && return 0
    say "kernel $kver keeps the in-tree btrfs module: this package has fs/btrfs of linux-source-6.1 $(shipped), not $ver; keep $ver's with $here/source.sh keep $kver (downloads linux-source-6.1=$ver), then dkms autoinstall"
    return 1
}

shipped() { # the versions shipped beside this script
    local f v=
    for f in "$here"/linux-btrfs-*.tar.xz; do
        [ -e "$f" ] || continue
        f=${f##*/linux-btrfs-}
        v="$v${v:+, }${f%.tar.xz}"
    done
    echo "${v:-none}"
}

extract() { # KVER DIR
    local kver=$1 dir=$2 ver t
    ver=$(kernel_version "$kver") || return 1
    t=$(have "$ver") || { check "$kver"; return 1; }
    mkdir -p "$dir"
    say "fs/btrfs of linux-source-6.1 $ver ($t) for $kver"
    tar -C "$dir" --strip-components=1 -xJf "$t"
}

deb_name() { echo "linux-source-6.1_${1//:/%3a}_all.deb"; }

fetch() { # KVER DIR
    local kver=$1 dir=$2 ver src tmp deb
    ver=$(kernel_version "$kver") || return 1
    mkdir -p "$dir"
    if have "$ver" >/dev/null; then
        extract "$kver" "$dir"
        return
    fi
    src=$(installed_version linux-source-6.1)
    if [ "$src" = "$ver" ] && [ -r "$tarball" ]; then
        say "fs/btrfs of linux-source-6.1 $ver (installed) for $kver"
        tar -C "$dir" --strip-components=1 -xJf "$tarball" --wildcards "${members[@]}"
        return 0
    fi
    tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/btrfs-scan-gate-source.XXXXXX")
    # shellcheck disable=SC2064 # expand now: tmp is local
    trap "rm -rf '$tmp'" EXIT
    deb=$archives/$(deb_name "$ver")
    if [ ! -s "$deb" ]; then
        say "linux-source-6.1 $ver is not installed (installed: ${src:-none}): apt-get download linux-source-6.1=$ver"
        # into a directory _apt may write, so apt need not download unsandboxed
        chmod 0755 "$tmp"
        chown _apt "$tmp" 2>/dev/null || true
        (cd "$tmp" && apt-get -q download "linux-source-6.1=$ver") >&2 || {
            say "apt-get download linux-source-6.1=$ver failed (offline, or no longer in the archive?)"
            return 1
        }
        deb=$tmp/$(deb_name "$ver")
        [ -s "$deb" ] || { say "apt-get download left no $(deb_name "$ver")"; return 1; }
    fi
    dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz |
        tar -C "$dir" --strip-components=1 -xJ --wildcards "${members[@]}" ||
        { say "cannot extract fs/btrfs from $deb"; return 1; }
    rm -rf "$tmp"
    trap - EXIT
}

keep() { # KVER
    local kver=$1 ver tmp
    ver=$(kernel_version "$kver") || return 1
    if have "$ver" >/dev/null; then
        say "fs/btrfs of linux-source-6.1 $ver is already here: $(have "$ver")"
        return 0
    fi
    mkdir -p "$cache"
    tmp=$(mktemp -d "$cache/keep.XXXXXX")
    if ! fetch "$kver" "$tmp/linux-source-6.1" || ! tar -C "$tmp" -cJf "$tmp/linux-btrfs.tar.xz" linux-source-6.1; then
        rm -rf "$tmp"
        return 1
    fi
    mv "$tmp/linux-btrfs.tar.xz" "$cache/linux-btrfs-$ver.tar.xz"
    rm -rf "$tmp"
    say "kept fs/btrfs of linux-source-6.1 $ver in $cache/linux-btrfs-$ver.tar.xz (removed on purge)"
}

case ${1:-} in
version) kernel_version "$2" ;;
check) check "$2" ;;
extract) extract "$2" "$3" ;;
fetch) fetch "$2" "$3" ;;
keep) keep "$2" ;;
*) echo "usage: source.sh version|check|keep KVER | extract|fetch KVER DIR" >&2; exit 2 ;;
esac

#!/bin/bash
# source.sh: where fs/btrfs of an installed Debian 6.1 kernel comes from. The patched module has
# to be that kernel's own btrfs plus the series, so the source must be linux-source-6.1 of exactly
# the kernel's package version. Only one version of linux-source-6.1 can be installed; the others
# are fetched from the apt archive (every 6.1 ABI of bookworm has its linux-source-6.1 version
# there while the archive keeps it) and only their fs/btrfs is kept.
#
#   source.sh version KVER   the package version of KVER (its installed linux-image-KVER,
#                            linux-image-KVER-unsigned or linux-headers-KVER; they must agree)
#   source.sh check KVER     exit 0 if KVER's source can be had without building anything:
#                            installed, kept from an earlier fetch, in apt's cache, or offered by
#                            the archive (apt-cache; nothing is downloaded). Else exit 1 and say
#                            why on stderr.
#   source.sh fetch KVER DIR extract fs/btrfs and Documentation/filesystems/btrfs.rst of KVER's
#                            version into DIR, downloading linux-source-6.1=VERSION if needed
#                            (apt-get download; about 140 MB, of which about 3 MB are kept)
#
# Sources, in this order: /usr/src/linux-source-6.1.tar.xz when linux-source-6.1 has the version;
# $BSG_DKMS_SOURCE_CACHE/linux-btrfs-VERSION.tar.xz (default /var/cache/btrfs-scan-gate-dkms, the
# fs/btrfs of an earlier fetch); /var/cache/apt/archives/linux-source-6.1_VERSION_all.deb;
# `apt-get download linux-source-6.1=VERSION`.
# Test seams: BSG_LINUX_SOURCE_TARBALL, BSG_DKMS_SOURCE_CACHE, BSG_APT_ARCHIVES; dpkg-query,
# apt-cache and apt-get from PATH.
set -euo pipefail
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

deb_name() { echo "linux-source-6.1_${1//:/%3a}_all.deb"; }

check() { # KVER
    local kver=$1 ver src
    ver=$(kernel_version "$kver") || return 1
    src=$(installed_version linux-source-6.1)
    [ "$src" != "$ver" ] || { [ -r "$tarball" ] && return 0; }
    [ ! -s "$cache/linux-btrfs-$ver.tar.xz" ] || return 0
    [ ! -s "$archives/$(deb_name "$ver")" ] || return 0
    if apt-cache show "linux-source-6.1=$ver" >/dev/null 2>&1; then
        return 0
    fi
    say "kernel $kver keeps the in-tree btrfs module: its source, linux-source-6.1 $ver, is not installed (installed: ${src:-none}), not kept in $cache, and the apt archive does not offer it (apt-cache show linux-source-6.1=$ver; run apt-get update, or install linux-source-6.1=$ver by hand, then dkms autoinstall)"
    return 1
}

fetch() { # KVER DIR
    local kver=$1 dir=$2 ver src tmp deb
    ver=$(kernel_version "$kver") || return 1
    src=$(installed_version linux-source-6.1)
    mkdir -p "$dir"
    if [ "$src" = "$ver" ] && [ -r "$tarball" ]; then
        say "fs/btrfs of linux-source-6.1 $ver (installed) for $kver"
        tar -C "$dir" --strip-components=1 -xJf "$tarball" --wildcards "${members[@]}"
        return 0
    fi
    if [ ! -s "$cache/linux-btrfs-$ver.tar.xz" ]; then
        mkdir -p "$cache"
        tmp=$(mktemp -d "$cache/fetch.XXXXXX")
        # shellcheck disable=SC2064 # expand now: tmp is local
        trap "rm -rf '$tmp'" EXIT
        deb=$archives/$(deb_name "$ver")
        if [ ! -s "$deb" ]; then
            say "linux-source-6.1 $ver is not installed (installed: ${src:-none}): apt-get download linux-source-6.1=$ver"
            # into a directory _apt may write, so apt need not download unsandboxed
            chmod 0755 "$tmp"
            chown _apt "$tmp" 2>/dev/null || true
            (cd "$tmp" && apt-get -q download "linux-source-6.1=$ver") >&2 || {
                say "kernel $kver keeps the in-tree btrfs module: apt-get download linux-source-6.1=$ver failed (offline, or no longer in the archive?)"
                return 1
            }
            deb=$tmp/$(deb_name "$ver")
            [ -s "$deb" ] || { say "apt-get download left no $(deb_name "$ver")"; return 1; }
        fi
        mkdir "$tmp/x"
        dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz |
            tar -C "$tmp/x" -xJ --wildcards "${members[@]}" ||
            { say "cannot extract fs/btrfs from $deb"; return 1; }
        tar -C "$tmp/x" -cJf "$tmp/linux-btrfs.tar.xz" linux-source-6.1
        mv "$tmp/linux-btrfs.tar.xz" "$cache/linux-btrfs-$ver.tar.xz"
        rm -rf "$tmp"
        trap - EXIT
        say "kept fs/btrfs of linux-source-6.1 $ver in $cache/linux-btrfs-$ver.tar.xz"
    fi
    say "fs/btrfs of linux-source-6.1 $ver ($cache/linux-btrfs-$ver.tar.xz) for $kver"
    tar -C "$dir" --strip-components=1 -xJf "$cache/linux-btrfs-$ver.tar.xz"
}

case ${1:-} in
version) kernel_version "$2" ;;
check) check "$2" ;;
fetch) fetch "$2" "$3" ;;
*) echo "usage: source.sh version|check KVER | fetch KVER DIR" >&2; exit 2 ;;
esac

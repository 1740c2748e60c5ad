#!/bin/bash
# dkms-version-mismatch.sh: where the dkms build gets fs/btrfs of a kernel (packaging/dkms/source.sh,
# dkms-build.sh). The source must be linux-source-6.1 of exactly the kernel's package version:
#  - installed at that version: used;
#  - another version installed, the kernel's version offered by the archive: fetched with
#    `apt-get download`, only fs/btrfs kept in the source cache, and the second build uses the
#    cache without apt (the old script refused every kernel whose version differed: issue 20);
#  - not offered (apt-cache knows no such version, or the download fails): refused with a message
#    naming the kernel, the version and that it keeps the in-tree module, and `source.sh check`
#    (what dkms.conf asks) says no without downloading;
#  - image and headers of one kernel at different versions, no kernel package, not 6.1: refused.
# dpkg-query, apt-cache and apt-get are stubs on PATH answering from files of the case; the fake
# linux-source-6.1 .deb holds a dummy fs/btrfs. Nothing of the host's packages is touched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dkms_dir=$here/../../packaging/dkms
work=$(mktemp -d "${TMPDIR:-/var/tmp}/dkms-mismatch.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/bin" "$work/kdir" "$work/archives" "$work/repo"
touch "$work/kdir/Makefile"
# the build directory as dkms makes it: the scripts and the patches side by side
build=$work/build
mkdir -p "$build/patches"
cp "$dkms_dir/dkms-build.sh" "$dkms_dir/source.sh" "$build/"
cp "$here/../../kernel-patches/6.1/series" "$here/../../kernel-patches/6.1/"*.patch "$build/patches/"

# stubs: VERSIONS holds "package version" lines (absent: not installed); REPO holds the .debs
# apt-get download can give; OFFERED the versions of linux-source-6.1 apt-cache knows;
# every apt call is logged
cat >"$work/bin/dpkg-query" <<'STUB'
#!/bin/sh
pkg=$(eval echo "\$$#")
v=$(awk -v p="$pkg" '$1 == p { print $2 }' "$VERSIONS")
[ -n "$v" ] || { echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; }
echo "installed $v"
STUB
cat >"$work/bin/apt-cache" <<'STUB'
#!/bin/sh
echo "apt-cache $*" >>"$APTLOG"
[ "$1" = show ] || exit 2
grep -qx "${2#linux-source-6.1=}" "$OFFERED" || { echo "E: Version not found" >&2; exit 100; }
echo "Package: linux-source-6.1"
STUB
cat >"$work/bin/apt-get" <<'STUB'
#!/bin/sh
echo "apt-get $*" >>"$APTLOG"
for a; do spec=$a; done
v=${spec#linux-source-6.1=}
[ -e "$REPO/linux-source-6.1_${v}_all.deb" ] || { echo "E: Failed to fetch linux-source-6.1 $v" >&2; exit 100; }
cp "$REPO/linux-source-6.1_${v}_all.deb" .
STUB
chmod +x "$work/bin/"*
# a fake linux-source-6.1 6.1.190-1: its tarball holds a dummy fs/btrfs
mkdir -p "$work/deb/DEBIAN" "$work/deb/usr/src" "$work/t/linux-source-6.1/fs/btrfs" \
    "$work/t/linux-source-6.1/Documentation/filesystems" "$work/t/linux-source-6.1/fs/ext4"
echo 'fake btrfs 6.1.190-1' >"$work/t/linux-source-6.1/fs/btrfs/super.c"
echo 'fake doc' >"$work/t/linux-source-6.1/Documentation/filesystems/btrfs.rst"
echo 'not wanted' >"$work/t/linux-source-6.1/fs/ext4/super.c"
tar -C "$work/t" -cJf "$work/deb/usr/src/linux-source-6.1.tar.xz" linux-source-6.1
printf 'Package: linux-source-6.1\nVersion: 6.1.190-1\nArchitecture: all\nMaintainer: test <t@example.org>\nDescription: fake\n' \
    >"$work/deb/DEBIAN/control"
dpkg-deb -Zxz --build "$work/deb" "$work/repo/linux-source-6.1_6.1.190-1_all.deb" >/dev/null
# the installed linux-source-6.1 (6.1.192-3): an empty tarball of the right name
tar -C "$work/t" -cJf "$work/source.tar.xz" --files-from /dev/null

run() { # run LOG CMD...: the build script or source.sh with the stubs
    local log=$1
    shift
    (cd "$build" && PATH=$work/bin:$PATH VERSIONS=$work/versions OFFERED=$work/offered REPO=$work/repo \
        APTLOG=$work/apt.log BSG_LINUX_SOURCE_TARBALL=$work/source.tar.xz \
        BSG_DKMS_SOURCE_CACHE=$work/cache BSG_APT_ARCHIVES=$work/archives "$@") >"$log" 2>&1
}
one() { # one NAME KVER EXPECT_RC EXPECT_MESSAGE VERSIONS-LINES...: dkms-build.sh
    local name=$1 kver=$2 want_rc=$3 want_msg=$4 rc=0
    shift 4
    printf '%s\n' "$@" >"$work/versions"
    run "$work/$name.log" bash ./dkms-build.sh "$kver" "$work/kdir" || rc=$?
    if [ "$want_rc" = 0 ]; then
        if [ "$rc" -eq 0 ] || ! grep -q -- "$want_msg" "$work/$name.log"; then
            cat "$work/$name.log"; fail "$name: expected to get past the source ('$want_msg')"
        fi
    else
        [ "$rc" -ne 0 ] || { cat "$work/$name.log"; fail "$name: accepted"; }
        grep -q -- "$want_msg" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: message lacks '$want_msg'"; }
        if grep -q 'applying' "$work/$name.log"; then fail "$name: started patching"; fi
    fi
    echo "ok: $name: $(grep 'btrfs-scan-gate-dkms' "$work/$name.log" | tail -n 1)"
}
check() { # check NAME KVER EXPECT_RC [MESSAGE]: source.sh check, as dkms.conf asks it
    local name=$1 kver=$2 want_rc=$3 msg=${4:-} rc=0
    : >"$work/apt.log"
    run "$work/$name.log" bash ./source.sh check "$kver" || rc=$?
    [ "$rc" = "$want_rc" ] || { cat "$work/$name.log"; fail "$name: check exit $rc, expected $want_rc"; }
    [ -z "$msg" ] || grep -q -- "$msg" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: message lacks '$msg'"; }
    if grep -q '^apt-get' "$work/apt.log"; then fail "$name: check downloaded something"; fi
    echo "ok: $name: check exit $rc $(head -c 200 "$work/$name.log")"
}

echo 6.1.192-3 >"$work/offered"
# refused: the kernel's own packages disagree, none is installed, not 6.1
one image-headers-differ 6.1.0-57-amd64 1 'linux-headers-6.1.0-57-amd64 is version 6.1.192-3 but linux-image-6.1.0-57-amd64 is 6.1.194-1' \
    'linux-source-6.1 6.1.192-3' 'linux-image-6.1.0-57-amd64 6.1.194-1' 'linux-headers-6.1.0-57-amd64 6.1.192-3'
one no-kernel-package 6.1.0-57-amd64 1 'no installed linux-image-6.1.0-57-amd64 or linux-headers' 'linux-source-6.1 6.1.192-3'
one not-6.1 6.12.74+deb12-amd64 1 'is not a 6.1 kernel' 'linux-source-6.1 6.1.192-3'
# the installed source of the kernel's version is used (the empty fake tarball then fails to extract)
one equal 6.1.0-57-amd64 1 'fs/btrfs of linux-source-6.1 6.1.192-3 (installed) for 6.1.0-57-amd64' \
    'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-57-amd64 6.1.192-3'
check equal-check 6.1.0-57-amd64 0

# another version installed, the kernel's version not offered by the archive: refused, no download
printf '%s\n' 'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-54-amd64 6.1.190-1' >"$work/versions"
check not-offered 6.1.0-54-amd64 1 'kernel 6.1.0-54-amd64 keeps the in-tree btrfs module: its source, linux-source-6.1 6.1.190-1, is not installed (installed: 6.1.192-3)'
# offered by apt-cache but the download fails (offline): the build says so
echo 6.1.190-1 >>"$work/offered"
check offered 6.1.0-54-amd64 0
mv "$work/repo/linux-source-6.1_6.1.190-1_all.deb" "$work/repo.deb"
one download-fails 6.1.0-54-amd64 1 'kernel 6.1.0-54-amd64 keeps the in-tree btrfs module: apt-get download linux-source-6.1=6.1.190-1 failed' \
    'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-54-amd64 6.1.190-1'
[ -z "$(find "$work/cache" -mindepth 1 -maxdepth 1 ! -name 'fetch.*' 2>/dev/null)" ] || fail "download-fails: something was kept in the cache"
# downloaded: fs/btrfs of 6.1.190-1 is extracted, kept (without the rest of the tree), patched
mv "$work/repo.deb" "$work/repo/linux-source-6.1_6.1.190-1_all.deb"
: >"$work/apt.log"
one fetched 6.1.0-54-amd64 0 'fs/btrfs of linux-source-6.1 6.1.190-1 for 6.1.0-54-amd64' \
    'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-54-amd64 6.1.190-1'
grep -qx 'apt-get -q download linux-source-6.1=6.1.190-1' "$work/apt.log" || { cat "$work/apt.log"; fail "fetched: no apt-get download"; }
grep -qx 'fake btrfs 6.1.190-1' "$build/build/fs/btrfs/super.c" || fail "fetched: the build tree is not 6.1.190-1's fs/btrfs"
grep -q 'does not apply to fs/btrfs of linux-source-6.1 6.1.190-1' "$work/fetched.log" || fail "fetched: the series was not applied to it"
kept=$work/cache/linux-btrfs-6.1.190-1.tar.xz
[ -s "$kept" ] || fail "fetched: $kept not kept"
tar -tJf "$kept" | grep -q '^linux-source-6.1/fs/btrfs/super.c$' || fail "fetched: kept tarball lacks fs/btrfs"
if tar -tJf "$kept" | grep -q ext4; then fail "fetched: kept more than fs/btrfs"; fi
[ -z "$(find "$work/cache" -mindepth 1 -maxdepth 1 -name 'fetch.*')" ] || fail "fetched: temporary directory left in the cache"
# a second build (an upgrade of the -dkms package) uses the kept source, without apt
: >"$work/apt.log"
one from-cache 6.1.0-54-amd64 0 'fs/btrfs of linux-source-6.1 6.1.190-1 (.*linux-btrfs-6.1.190-1.tar.xz) for 6.1.0-54-amd64' \
    'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-54-amd64 6.1.190-1'
[ ! -s "$work/apt.log" ] || { cat "$work/apt.log"; fail "from-cache: apt was asked"; }
sed -i '/6.1.190-1/d' "$work/offered"
check cached-not-offered 6.1.0-54-amd64 0
echo "PASS: a kernel's fs/btrfs comes from linux-source-6.1 of its own version: installed, or fetched from the archive and kept; not offered or not downloadable: refused with a message naming the kernel that keeps the in-tree module"

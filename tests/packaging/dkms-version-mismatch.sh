#!/bin/bash
# dkms-version-mismatch.sh: where the dkms build gets fs/btrfs of a kernel (packaging/dkms/source.sh,
# dkms-build.sh). The source must be linux-source-6.1 of exactly the kernel's package version, and a
# module build never downloads anything:
#  - the kernel's version is the one the package ships (linux-btrfs-VERSION.tar.xz beside the
#    scripts): used;
#  - another version, not kept: refused with a message naming the kernel, the version and
#    `source.sh keep`; no apt call (the old build downloaded linux-source-6.1 from inside a kernel's
#    postinst, where a failure went unseen);
#  - `source.sh keep KVER`, run by the administrator: from the installed linux-source-6.1 when it has
#    the version (no download), else `apt-get download`; only fs/btrfs kept; a failed download says
#    so and keeps nothing; the next build uses the kept source without apt;
#  - image and headers of one kernel at different versions, no kernel package, not 6.1: refused.
# dpkg-query and apt-get are stubs on PATH answering from files of the case; the fake
# linux-source-6.1 .deb holds a dummy fs/btrfs. Nothing of the host's packages is touched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dkms_dir=$here/../../packaging/dkms
work=$(mktemp -d "${TMPDIR:-/var/tmp}/dkms-mismatch.XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/bin" "$work/kdir" "$work/archives" "$work/repo"
touch "$work/kdir/Makefile"
# the build directory as dkms makes it: the scripts and the patches side by side
build=$work/build
mkdir -p "$build/patches"
cp "$dkms_dir/dkms-build.sh" "$dkms_dir/source.sh" "$build/"
# the fs/btrfs the package ships: 6.1.192-3's (a dummy)
mkdir -p "$work/s/linux-source-6.1/fs/btrfs"
echo 'fake btrfs 6.1.192-3' >"$work/s/linux-source-6.1/fs/btrfs/super.c"
tar -C "$work/s" -cJf "$build/linux-btrfs-6.1.192-3.tar.xz" linux-source-6.1
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
        case $want_msg in *'does not apply'*) ;; *) if grep -q 'applying' "$work/$name.log"; then fail "$name: started patching"; fi ;; esac
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
    'linux-image-6.1.0-57-amd64 6.1.194-1' 'linux-headers-6.1.0-57-amd64 6.1.192-3'
one no-kernel-package 6.1.0-57-amd64 1 'no installed linux-image-6.1.0-57-amd64 or linux-headers' 'linux-source-6.1 6.1.192-3'
one not-6.1 6.12.74+deb12-amd64 1 'is not a 6.1 kernel' 'linux-source-6.1 6.1.192-3'
# the shipped source of the kernel's version is used and patched (the dummy does not take the series)
: >"$work/apt.log"
one shipped 6.1.0-57-amd64 1 'does not apply to fs/btrfs of linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-57-amd64 6.1.192-3'
grep -q 'fs/btrfs of linux-source-6.1 6.1.192-3 (.*/linux-btrfs-6.1.192-3.tar.xz) for 6.1.0-57-amd64' "$work/shipped.log" ||
    { cat "$work/shipped.log"; fail "shipped: not built from the shipped source"; }
grep -qx 'fake btrfs 6.1.192-3' "$build/build/fs/btrfs/super.c" || fail "shipped: the build tree is not the shipped fs/btrfs"
check shipped-check 6.1.0-57-amd64 0

# another version, not kept: refused, nothing asked of apt, the message names `source.sh keep`
printf '%s\n' 'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-54-amd64 6.1.190-1' >"$work/versions"
: >"$work/apt.log"
one other-version 6.1.0-54-amd64 1 'kernel 6.1.0-54-amd64 keeps the in-tree btrfs module: this package has fs/btrfs of linux-source-6.1 6.1.192-3, not 6.1.190-1; keep 6.1.190-1.s with .*source.sh keep 6.1.0-54-amd64' \
    'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-54-amd64 6.1.190-1'
[ ! -s "$work/apt.log" ] || { cat "$work/apt.log"; fail "other-version: the build asked apt"; }
check other-version-check 6.1.0-54-amd64 1 'not 6.1.190-1'
# keep, the download fails (offline): says so, keeps nothing
mv "$work/repo/linux-source-6.1_6.1.190-1_all.deb" "$work/repo.deb"
rc=0
run "$work/keep-fails.log" bash ./source.sh keep 6.1.0-54-amd64 || rc=$?
[ "$rc" != 0 ] || { cat "$work/keep-fails.log"; fail "keep-fails: succeeded"; }
grep -q 'apt-get download linux-source-6.1=6.1.190-1 failed' "$work/keep-fails.log" || { cat "$work/keep-fails.log"; fail "keep-fails: no message"; }
[ -z "$(find "$work/cache" -mindepth 1 -maxdepth 1 2>/dev/null)" ] || { ls "$work/cache"; fail "keep-fails: something was kept in the cache"; }
echo "ok: keep-fails: $(tail -n 1 "$work/keep-fails.log")"
# keep, downloaded: only fs/btrfs kept; then the build uses it without apt
mv "$work/repo.deb" "$work/repo/linux-source-6.1_6.1.190-1_all.deb"
: >"$work/apt.log"
run "$work/keep.log" bash ./source.sh keep 6.1.0-54-amd64 || { cat "$work/keep.log"; fail "keep: failed"; }
grep -qx 'apt-get -q download linux-source-6.1=6.1.190-1' "$work/apt.log" || { cat "$work/apt.log"; fail "keep: no apt-get download"; }
kept=$work/cache/linux-btrfs-6.1.190-1.tar.xz
[ -s "$kept" ] || fail "keep: $kept not kept"
tar -tJf "$kept" | grep -q '^linux-source-6.1/fs/btrfs/super.c$' || fail "keep: kept tarball lacks fs/btrfs"
if tar -tJf "$kept" | grep -q ext4; then fail "keep: kept more than fs/btrfs"; fi
[ -z "$(find "$work/cache" -mindepth 1 -maxdepth 1 -name 'keep.*')" ] || fail "keep: temporary directory left in the cache"
echo "ok: keep: $(tail -n 1 "$work/keep.log")"
: >"$work/apt.log"
one from-cache 6.1.0-54-amd64 1 'does not apply to fs/btrfs of linux-source-6.1 6.1.190-1' \
    'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-54-amd64 6.1.190-1'
grep -qx 'fake btrfs 6.1.190-1' "$build/build/fs/btrfs/super.c" || fail "from-cache: the build tree is not 6.1.190-1's fs/btrfs"
[ ! -s "$work/apt.log" ] || { cat "$work/apt.log"; fail "from-cache: apt was asked"; }
check from-cache-check 6.1.0-54-amd64 0
# keep from the installed linux-source-6.1 of the kernel's version: no download
rm -rf "$work/cache"
mkdir -p "$work/t2/linux-source-6.1/fs/btrfs"
echo 'installed btrfs 6.1.190-1' >"$work/t2/linux-source-6.1/fs/btrfs/super.c"
tar -C "$work/t2" -cJf "$work/source.tar.xz" linux-source-6.1
printf '%s\n' 'linux-source-6.1 6.1.190-1' 'linux-headers-6.1.0-54-amd64 6.1.190-1' >"$work/versions"
: >"$work/apt.log"
run "$work/keep-installed.log" bash ./source.sh keep 6.1.0-54-amd64 || { cat "$work/keep-installed.log"; fail "keep-installed: failed"; }
[ ! -s "$work/apt.log" ] || { cat "$work/apt.log"; fail "keep-installed: apt was asked"; }
tar -xOJf "$work/cache/linux-btrfs-6.1.190-1.tar.xz" linux-source-6.1/fs/btrfs/super.c | grep -qx 'installed btrfs 6.1.190-1' ||
    fail "keep-installed: not the installed source's fs/btrfs"
echo "ok: keep-installed: $(tail -n 1 "$work/keep-installed.log")"
echo "PASS: a kernel's fs/btrfs is the shipped one of its version or one the administrator kept (source.sh keep: installed source or apt-get download, fs/btrfs only); a build never downloads; other versions are refused naming source.sh keep"

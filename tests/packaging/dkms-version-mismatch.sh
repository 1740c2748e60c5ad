#!/bin/bash
# dkms-version-mismatch.sh: the dkms build script refuses a kernel whose package version differs
# from linux-source-6.1's, and a kernel that is not 6.1, with a message naming what differs; it
# never starts extracting or building. dpkg-query is replaced by a stub on PATH that reports the
# versions of the case (the host's packages are not touched or consulted).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
script=$here/../../packaging/dkms/dkms-build.sh
work=$(mktemp -d "${TMPDIR:-/var/tmp}/dkms-mismatch.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/bin" "$work/kdir" "$work/build"
touch "$work/kdir/Makefile" "$work/source.tar.xz"
# stub: VERSIONS holds "package version" lines; an absent package is "not installed"
cat >"$work/bin/dpkg-query" <<'STUB'
#!/bin/sh
pkg=$(eval echo "\$$#")
v=$(awk -v p="$pkg" '$1 == p { print $2 }' "$VERSIONS")
[ -n "$v" ] || { echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; }
echo "installed $v"
STUB
chmod +x "$work/bin/dpkg-query"

one() { # one NAME KVER EXPECT_RC EXPECT_MESSAGE VERSIONS-LINES...
    local name=$1 kver=$2 want_rc=$3 want_msg=$4 rc=0
    shift 4
    printf '%s\n' "$@" >"$work/versions"
    (cd "$work/build" && PATH=$work/bin:$PATH VERSIONS=$work/versions \
        BSG_LINUX_SOURCE_TARBALL=$work/source.tar.xz bash "$script" "$kver" "$work/kdir") \
        >"$work/$name.log" 2>&1 || rc=$?
    if [ "$want_rc" = 0 ]; then
        if [ "$rc" -eq 0 ] || ! grep -q "$want_msg" "$work/$name.log"; then
            cat "$work/$name.log"; fail "$name: expected to get past the checks ('$want_msg')"
        fi
    else
        [ "$rc" -ne 0 ] || { cat "$work/$name.log"; fail "$name: accepted"; }
        grep -q -- "$want_msg" "$work/$name.log" || { cat "$work/$name.log"; fail "$name: message lacks '$want_msg'"; }
        if grep -q 'fs/btrfs of linux-source' "$work/$name.log"; then fail "$name: started the build"; fi
    fi
    echo "ok: $name: $(grep -m1 'btrfs-scan-gate-dkms' "$work/$name.log" || true)"
}
one headers-differ 6.1.0-57-amd64 1 'linux-headers-6.1.0-57-amd64 is version 6.1.190-1 but linux-source-6.1 is 6.1.192-3' \
    'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-57-amd64 6.1.190-1'
one image-differs 6.1.0-57-amd64 1 'linux-image-6.1.0-57-amd64 is version 6.1.194-1 but linux-source-6.1 is 6.1.192-3' \
    'linux-source-6.1 6.1.192-3' 'linux-image-6.1.0-57-amd64 6.1.194-1' 'linux-headers-6.1.0-57-amd64 6.1.192-3'
one no-source 6.1.0-57-amd64 1 'linux-source-6.1 is not installed' 'linux-headers-6.1.0-57-amd64 6.1.192-3'
one no-kernel-package 6.1.0-57-amd64 1 'no installed linux-image-6.1.0-57-amd64 or linux-headers' 'linux-source-6.1 6.1.192-3'
one not-6.1 6.12.74+deb12-amd64 1 'is not a 6.1 kernel' 'linux-source-6.1 6.1.192-3'
# the contrast: equal versions pass the checks (and then fail on the empty fake tarball)
one equal 6.1.0-57-amd64 0 'fs/btrfs of linux-source-6.1 6.1.192-3 for 6.1.0-57-amd64' \
    'linux-source-6.1 6.1.192-3' 'linux-headers-6.1.0-57-amd64 6.1.192-3'
echo "PASS: mismatched, missing and non-6.1 kernels refused with a message; equal versions accepted"

#!/bin/bash
# deb-rules-paths.sh SRCDIR: debian/rules picks udev's and systemd's directories from udev.pc and
# systemd.pc where they exist (bookworm: in the udev and systemd packages) and falls back to the
# /usr paths where they do not (trixie without systemd-dev), instead of stopping the build.
set -euo pipefail
src=$1
fail() { echo "FAIL: $*"; exit 1; }
command -v pkg-config >/dev/null || fail "pkg-config not installed (scripts/setup.sh)"
cd "$src"
# without the .pc files (PKG_CONFIG_LIBDIR at an empty directory): trixie's paths
empty=$(mktemp -d "${TMPDIR:-/tmp}/deb-rules-paths.XXXXXX")
trap 'rm -rf "$empty"' EXIT
got=$(PKG_CONFIG_LIBDIR=$empty PKG_CONFIG_PATH='' make -s -f debian/rules print-paths) || fail "debian/rules print-paths failed"
[ "$got" = "UDEVDIR=/usr/lib/udev UNITDIR=/usr/lib/systemd/system" ] || fail "without udev.pc/systemd.pc: '$got'"
# with them: what they say
want="UDEVDIR=$(pkg-config --variable=udevdir udev 2>/dev/null || echo /usr/lib/udev) UNITDIR=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /usr/lib/systemd/system)"
got=$(make -s -f debian/rules print-paths) || fail "debian/rules print-paths failed"
[ "$got" = "$want" ] || fail "with this host's .pc files: '$got', expected '$want'"
echo "PASS: without .pc files the /usr paths; with them ($got)"

#!/bin/bash
# The installed btrfs-scan-gate.service: its ordering (the point of the unit) and
# `systemd-analyze verify` of it inside the staging root.
# Usage: unit-test.sh STAGE UNITDIR HELPER_PATH
set -euo pipefail
stage=$1 unitdir=$2 helper=$3
unit=$stage$unitdir/btrfs-scan-gate.service
fail() { echo "FAIL: $*"; exit 1; }
[ -f "$unit" ] || fail "$unit not installed"
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }

# value KEY: every value of KEY= in [Unit]/[Service]/[Install], space-separated
value() { sed -n "s/^$1=//p" "$unit" | tr '\n' ' '; }
has() { # has KEY WORD
    case " $(value "$1") " in *" $2 "*) ;; *) fail "$1= lacks $2 (has: $(value "$1"))" ;; esac
}
has DefaultDependencies no
has Before systemd-udev-trigger.service
has Before sysinit.target
has Wants modprobe@btrfs.service
has After modprobe@btrfs.service
has Type oneshot
has RemainAfterExit yes
has WantedBy sysinit.target
has SuccessExitStatus 3
[ "$(value ExecStart)" = "$helper boot " ] || fail "ExecStart= is '$(value ExecStart)', not '$helper boot'"
case " $(value After) " in *" systemd-udev-trigger.service "*) fail "After=systemd-udev-trigger.service" ;; esac

# verify needs the ExecStart binary in the root; without an installed helper use a stand-in
if [ ! -x "$stage$helper" ]; then
    echo "NOTE: helper not installed in $stage; verifying against a stand-in executable"
    mkdir -p "$stage$(dirname "$helper")"
    printf '#!/bin/sh\nexit 0\n' > "$stage$helper"
    chmod 755 "$stage$helper"
    standin=1
fi
log=$stage.verify.log
rc=0
# --man=no: verify would run the host's man(1), which knows nothing of the staging root; the
# Documentation= targets are checked in the root below instead
SYSTEMD_LOG_LEVEL=debug systemd-analyze verify --man=no --root="$stage" "$unitdir/btrfs-scan-gate.service" >"$log" 2>&1 || rc=$?
[ -z "${standin:-}" ] || rm -f "$stage$helper"
grep -v -e '^Looking' "$log" | grep -i -e 'btrfs-scan-gate' -e 'error' -e 'warn' | head -30 || true
[ "$rc" -eq 0 ] || fail "systemd-analyze verify exited $rc, see $log"
if grep -i 'btrfs-scan-gate.service:[0-9]*:' "$log"; then fail "systemd-analyze complains about the unit"; fi
# Documentation= names what is installed (issue 20 item 1: a file: URL to README.md broke under
# Debian's dh_compress; man:btrfs-scan-gate(8) is installed by every build)
docs=$(value Documentation)
[ -n "$docs" ] || fail "no Documentation="
for doc in $docs; do
    case $doc in
    man:*) n=${doc#man:}; sec=${n##*(}; sec=${sec%)}; n=${n%(*}
        [ -n "$(find "$stage" -path "*/share/man/man$sec/$n.$sec*" -print -quit)" ] ||
            fail "Documentation=$doc: no man page $n($sec) in $stage" ;;
    file:*) [ -e "$stage${doc#file:}" ] || fail "Documentation=$doc: not installed in $stage" ;;
    esac
done
echo "PASS: ordering, systemd-analyze verify, Documentation= ($docs) installed"

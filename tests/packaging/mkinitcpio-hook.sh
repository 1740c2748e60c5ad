#!/bin/bash
# mkinitcpio-hook.sh BUILD_UDEV_DIR HELPER_PATH CONFIG_PATH RULESDIR: runs the gate's mkinitcpio
# hooks the way mkinitcpio does, with its functions stubbed to record their calls:
#  - install/btrfs-scan-gate: sourced into bash, HOOKS set, build() called; add_module,
#    add_binary, add_file, add_symlink, add_systemd_unit, add_runscript, warning recorded;
#  - hooks/btrfs-scan-gate: sourced into busybox ash (mkinitcpio's init shell), run_earlyhook
#    called with modprobe, err and the helper stubbed (the helper's absolute path is pointed at a
#    stub in a copy of the hook).
set -euo pipefail
dir=$1 helper=$2 config=$3 rulesdir=$4
work=$(mktemp -d "${TMPDIR:-/var/tmp}/mkinitcpio-hook.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
install_hook=$dir/mkinitcpio/install/btrfs-scan-gate
run_hook=$dir/mkinitcpio/hooks/btrfs-scan-gate
command -v busybox >/dev/null || fail "busybox not installed (scripts/setup.sh installs busybox-static)"

build_one() { # build_one NAME HOOKS...: calls recorded in $work/NAME.calls
    local name=$1
    shift
    # shellcheck disable=SC2016 # expanded by the inner bash
    bash -c '
        set -euo pipefail
        hook=$1; shift
        HOOKS=("$@")
        rec() { printf "%s\n" "$*" >>"$CALLS"; }
        add_module() { rec add_module "$@"; }
        add_binary() { rec add_binary "$@"; }
        add_file() { rec add_file "$@"; }
        add_symlink() { rec add_symlink "$@"; }
        add_systemd_unit() { rec add_systemd_unit "$@"; }
        add_runscript() { rec add_runscript; }
        warning() { rec warning "$@"; }
        # shellcheck disable=SC1090
        . "$hook"
        build
        help >"$CALLS.help"
    ' bash "$install_hook" "$@" || fail "$name: build() failed"
}
export CALLS
expect() { grep -qxF -- "$2" "$work/$1.calls" || { cat "$work/$1.calls"; fail "$1: expected call '$2'"; }; }
expect_not() { if grep -qF -- "$2" "$work/$1.calls"; then cat "$work/$1.calls"; fail "$1: unexpected '$2'"; fi; }

CALLS=$work/plain.calls; : >"$CALLS"
build_one plain base btrfs-scan-gate udev autodetect modconf block filesystems fsck
expect plain "add_module btrfs"
expect plain "add_binary $helper"
expect plain "add_file $rulesdir/64-btrfs.rules /etc/udev/rules.d/64-btrfs.rules"
expect plain "add_file $rulesdir/64-btrfs-dm.rules /etc/udev/rules.d/64-btrfs-dm.rules"
expect plain "add_runscript"
expect_not plain "warning"
expect_not plain "add_systemd_unit"
if [ -e "$config" ]; then expect plain "add_file $config"; else expect_not plain "add_file $config"; fi
grep -q 'HOOKS=(base btrfs-scan-gate udev' "$work/plain.calls.help" || fail "help() does not show the HOOKS line"

CALLS=$work/after-udev.calls; : >"$CALLS"
build_one after-udev base udev btrfs-scan-gate btrfs block filesystems
grep -q "^warning btrfs-scan-gate: list it before 'udev'" "$CALLS" || { cat "$CALLS"; fail "no warning for the gate after udev"; }
grep -q "^warning btrfs-scan-gate: the 'btrfs' hook" "$CALLS" || { cat "$CALLS"; fail "no warning for the btrfs hook"; }

CALLS=$work/systemd.calls; : >"$CALLS"
build_one systemd base systemd btrfs-scan-gate autodetect block filesystems
expect systemd "add_systemd_unit btrfs-scan-gate.service"
expect systemd "add_symlink /usr/lib/systemd/system/sysinit.target.wants/btrfs-scan-gate.service ../btrfs-scan-gate.service"
expect_not systemd "add_runscript"

# the runtime hook in busybox ash
grep -qF "'$helper' boot" "$run_hook" || fail "the runtime hook does not call '$helper' boot"
sed "s|'$helper'|'$work/helper'|" "$run_hook" >"$work/runtime-hook"
runtime() { # runtime NAME HELPER_EXIT
    printf '#!/bin/sh\necho "helper $*" >>%s\nexit %s\n' "$work/$1.calls" "$2" >"$work/helper"
    chmod +x "$work/helper"
    : >"$work/$1.calls"
    # shellcheck disable=SC2016 # expanded by the inner ash
    busybox ash -c '
        modprobe() { echo "modprobe $*" >>"$CALLS"; }
        err() { echo "err $*" >>"$CALLS"; }
        . "$1"
        run_earlyhook
    ' ash "$work/runtime-hook" || fail "$1: run_earlyhook returned non-zero (init would stop)"
}
CALLS=$work/ok.calls runtime ok 0
[ "$(cat "$work/ok.calls")" = "$(printf 'modprobe -q btrfs\nhelper boot')" ] || { cat "$work/ok.calls"; fail "ok: expected modprobe, then helper boot"; }
CALLS=$work/helper-fails.calls runtime helper-fails 1
grep -q '^err btrfs-scan-gate: boot failed' "$work/helper-fails.calls" || { cat "$work/helper-fails.calls"; fail "no err when the helper fails"; }
# exit 3 (issue 20 item 5): decided, but not in force - said as that, not as a failed boot
CALLS=$work/helper-3.calls runtime helper-3 3
grep -q '^err btrfs-scan-gate: skip list not in force' "$work/helper-3.calls" || { cat "$work/helper-3.calls"; fail "exit 3 not reported as 'not in force'"; }
if grep -q 'boot failed' "$work/helper-3.calls"; then fail "exit 3 reported as a failed boot"; fi
echo "PASS: install hook (plain, after udev + btrfs hook warned, systemd) and runtime hook (helper ok, failing, exit 3) as mkinitcpio calls them"

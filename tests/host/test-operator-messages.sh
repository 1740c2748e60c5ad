#!/bin/bash
# Host test: what an operator sees (issue 27 item 8). Each verb refused for another user says what
# that verb needs root for; `udev` as another user decides only and says so (ACTION=dry-run, no
# "skipped", no claim that it listed anything in skip_scan); `trust` of a path that is no block
# device is an error; -V and --version print the version; the missing-command hint names every
# command; the RAUC hook says what reconcile's exit 3 and 4 mean instead of "reconcile failed"; the
# man page gives one default for RAUC's system.conf, the search order the helper uses.
# env: BSG_HELPER, BSG_HOOKDIR (the built udev/updaters), BSG_MANPAGE, TMPDIR.
set -euo pipefail
helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
hookdir=${BSG_HOOKDIR:?BSG_HOOKDIR must name the built updater hooks}
man=${BSG_MANPAGE:?BSG_MANPAGE must name helper/btrfs-scan-gate.8}
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root (runs the helper as another user)"; exit 77; }
command -v setpriv >/dev/null || fail "setpriv not installed (util-linux)"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/operator.XXXXXX")
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

# 1. non-root refusals, each with its own reason
declare -A why=(
    [status]="reads every block device's superblock"
    [boot]="writes the kernel's skip list"
    [reconcile]="changes the kernel's skip list and registrations; it reads no device"
    [trust]="reads the inventory in /run/btrfs-scan-gate"
)
for verb in status boot reconcile trust; do
    args=("$verb")
    [ "$verb" = trust ] && args+=(/dev/null)
    rc=0
    as_nobody "$helper" "${args[@]}" >"$work/$verb.out" 2>"$work/$verb.err" || rc=$?
    [ "$rc" = 1 ] || fail "$verb as nobody exited $rc, not 1"
    grep -qF "$verb: needs root (" "$work/$verb.err" && grep -qF "${why[$verb]}" "$work/$verb.err" ||
        fail "$verb as nobody: '$(cat "$work/$verb.err")' does not say '${why[$verb]}'"
    # the one reason every verb gave before, wrong for trust and reconcile
    ! grep -q "reads every block device and the kernel's btrfs state" "$work/$verb.err" ||
        fail "$verb as nobody gives the old blanket reason: $(cat "$work/$verb.err")"
    [ -s "$work/$verb.out" ] && fail "$verb as nobody printed on stdout: $(cat "$work/$verb.out")"
done
ok "each verb refused for another user says why that verb needs root"

# 2. udev as another user: decides only, says so, claims no action (a loop device nobody may read,
# which root's run would list in skip_scan as unreadable)
truncate -s 1M "$work/slot.img"
loop=$(losetup --show -f "$work/slot.img") || { echo "SKIP: no free loop device"; exit 77; }
trap 'losetup -d "$loop"; rm -rf "$work"' EXIT
dev=$loop
as_nobody test -r "$dev" && fail "$dev is readable to nobody"
rc=0
as_nobody env BTRFS_SCAN_GATE_LOG=stderr "$helper" udev "$dev" >"$work/udev.out" 2>"$work/udev.err" || rc=$?
[ "$rc" = 0 ] || fail "udev as nobody exited $rc"
grep -qx 'BTRFS_SCAN_GATE_ACTION=dry-run' "$work/udev.out" || fail "udev as nobody: $(grep ACTION "$work/udev.out")"
grep -q 'ACTION=.*skipped' "$work/udev.out" && fail "udev as nobody reports skipped"
grep -q 'udev: not root: decides only' "$work/udev.err" || fail "udev as nobody does not say it only decides: $(cat "$work/udev.err")"
grep -q ': listed in skip_scan' "$work/udev.err" && fail "udev as nobody claims it listed: $(cat "$work/udev.err")"
ok "udev as another user: ACTION=dry-run, says it decided only"

# 3. trust of something that is no block device
for p in /dev/nonexistent-bsg "$work"; do
    rc=0
    "$helper" trust "$p" >"$work/trust.out" 2>"$work/trust.err" || rc=$?
    [ "$rc" = 1 ] || fail "trust $p exited $rc, not 1"
    grep -qE "trust: $p: (No such file or directory|not a block device)" "$work/trust.err" ||
        fail "trust $p: '$(cat "$work/trust.err")'"
    [ -s "$work/trust.out" ] && fail "trust $p answered: $(cat "$work/trust.out")"
done
ok "trust of a missing path or a directory is an error"

# 4. -V, --version, the missing-command hint
v=$("$helper" --version)
[ "$("$helper" -V)" = "$v" ] && [[ $v == "btrfs-scan-gate "[0-9]* ]] || fail "-V: '$("$helper" -V 2>&1)', --version: '$v'"
rc=0
"$helper" 2>"$work/none.err" || rc=$?
[ "$rc" = 2 ] || fail "no command exited $rc"
for verb in udev trust boot reconcile status; do
    grep -q "missing command (.*\b$verb\b" "$work/none.err" || fail "the missing-command hint lacks $verb: $(cat "$work/none.err")"
done
"$helper" --help | grep -q -- '-V, --version' || fail "--help does not list -V"
ok "-V, --version, the hint names every command"

# 5. the RAUC hook on reconcile's exit 3 and 4 (a stand-in helper; no real device is touched)
printf '#!/bin/sh\nexit 0\n' >"$work/udevadm"
for code in 1 3 4; do
    printf '#!/bin/sh\nexit %s\n' "$code" >"$work/helper-$code"
    chmod +x "$work/helper-$code" "$work/udevadm"
    rc=0
    env UDEVADM="$work/udevadm" BTRFS_SCAN_GATE_HELPER="$work/helper-$code" RAUC_SLOT_NAME=rootfs.1 \
        RAUC_SLOT_DEVICE="$loop" "$hookdir/rauc-post-install" slot-post-install >/dev/null 2>"$work/hook-$code.err" || rc=$?
    [ "$rc" = 0 ] || fail "RAUC hook exited $rc for reconcile's $code"
done
grep -q "reconcile failed (exit 1)" "$work/hook-1.err" || fail "exit 1 not reported as a failure: $(cat "$work/hook-1.err")"
for code in 3 4; do
    grep -q "reconcile failed" "$work/hook-$code.err" && fail "exit $code reported as 'reconcile failed': $(cat "$work/hook-$code.err")"
done
grep -q "helper only" "$work/hook-3.err" || fail "exit 3 not explained: $(cat "$work/hook-3.err")"
grep -q "NOT PROTECTED" "$work/hook-4.err" || fail "exit 4 not explained: $(cat "$work/hook-4.err")"
ok "RAUC hook: exit 1 failed, 3 helper only, 4 NOT PROTECTED"

# 6. the man page: one default for RAUC's system.conf, the order the helper searches
[ "$(grep -c 'rauc/system.conf' "$man")" = 1 ] || fail "the man page names system.conf defaults in $(grep -c 'rauc/system.conf' "$man") places: $(grep -n 'rauc/system.conf' "$man")"
line=$(grep 'rauc/system.conf' "$man")
order=$(printf '%s\n' "$line" | grep -o '/[a-z/]*rauc/system.conf' | tr '\n' ' ')
[ "$order" = "/etc/rauc/system.conf /run/rauc/system.conf /usr/lib/rauc/system.conf " ] || fail "man page order: $order"
ok "man page: one default for system.conf, RAUC's search order"
echo "PASS: operator messages (non-root reasons, udev as another user, trust of no device, -V, hint, RAUC hook exit codes, man page default)"

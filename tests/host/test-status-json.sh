#!/bin/bash
# Host test of `status --json` on a real btrfs loop device whose label holds bytes that are not
# UTF-8 and a control byte (a hostile stick's label): the output must be valid JSON (strict UTF-8),
# the label escaped (\ufffd for the invalid byte, \u0001, \"), absent values null, numbers numbers,
# and "devices" an array. Runs in a private mount namespace (tmpfs /run). env: BSG_HELPER, TMPDIR.
set -euo pipefail
helper=${BSG_HELPER:?BSG_HELPER must name the helper binary}
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root"; exit 77; }
for t in losetup mkfs.btrfs btrfs unshare python3; do
    command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh)"
done
if [ -z "${BSG_STATUS_JSON_IN_NS:-}" ]; then
    BSG_STATUS_JSON_IN_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
fi
work=$(mktemp -d "${TMPDIR:-/var/tmp}/status-json.XXXXXX")
loop=
cleanup() {
    if [ -n "$loop" ]; then
        btrfs device scan --forget "$loop" >/dev/null 2>&1 || true
        losetup -d "$loop" || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o mode=0755 bsg-status-json-run /run

truncate -s 120M "$work/fs.img"
mkfs.btrfs -f -L "$(printf 'caf\351\001"x')" "$work/fs.img" >"$work/mkfs.log" 2>&1 || fail "mkfs.btrfs"
loop=$(losetup --show -f "$work/fs.img") || { echo "SKIP: no free loop device"; exit 77; }
rc=0
BTRFS_SCAN_GATE_LOG=stderr "$helper" status --json >"$work/status.json" 2>"$work/status.err" || rc=$?
# 3: the kernel cannot apply the list (a host kernel without skip_scan and temp_fsid); 4: a patched
# module installed on the host but not running (the verdict below says which)
[ "$rc" = 0 ] || [ "$rc" = 3 ] || [ "$rc" = 4 ] || { cat "$work/status.err"; fail "status --json exited $rc"; }
python3 - "$work/status.json" "$loop" <<'PY' || { cat "$work/status.json"; fail "status --json output is wrong"; }
import json, sys
raw = open(sys.argv[1], "rb").read()
doc = json.loads(raw.decode("utf-8", errors="strict"))   # strict: invalid UTF-8 is an error
assert isinstance(doc["devices"], list), "devices is not an array"
# format 1 (issue 20 item 5): a version, lists as arrays, null for unknown, devices sorted by name
assert doc.get("format") == 1, "no \"format\": 1: %r" % doc.get("format")
# the verdict (issue 27 item 2): a state, ok, one line of text, the fix (null when nothing is wrong)
v = doc["verdict"]
assert v["state"] in ("skip-scan", "temp-fsid", "helper-only", "module-not-running", "list-not-applied"), v
assert isinstance(v["ok"], bool) and v["ok"] == (v["state"] not in ("module-not-running", "list-not-applied")), v
assert isinstance(v["text"], str) and v["text"] and "\n" not in v["text"], v
assert (v["fix"] is None) == v["ok"], "fix must be given exactly when not ok: %r" % v
assert list(doc)[:3] == ["format", "version", "verdict"], "the verdict is not the first item: %r" % list(doc)[:3]
assert isinstance(doc["skip_scan_computed"], list), "skip_scan_computed is not an array"
assert doc["skip_scan_current"] is None or isinstance(doc["skip_scan_current"], list), "skip_scan_current"
assert doc["kernel"]["skip_scan"] or doc["kernel"]["skip_scan_writable"] is None, "writable of an absent parameter is not null"
names = [d["devnode"] for d in doc["devices"]]
import re
key = lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)]
assert names == sorted(names, key=key), "devices not sorted: %r" % names
dev = [d for d in doc["devices"] if d["devnode"] == sys.argv[2]]
assert len(dev) == 1, "the loop device is not listed"
d = dev[0]
assert d["label"] == 'caf\ufffd\x01"x', "label %r" % d["label"]
assert isinstance(d["devid"], int) and isinstance(d["generation"], int), "numbers are not numbers"
assert d["problem"] is None, "absent problem is not null: %r" % d["problem"]
assert d["slot"] is None, "absent slot is not null: %r" % d["slot"]
assert isinstance(d["seed"], bool)
assert d["registered"] is None, "registered of a device the (empty) inventory does not know: %r" % d["registered"]
assert d["slot_active"] is None, "slot_active without a slot: %r" % d["slot_active"]
print("label", repr(d["label"]), "devid", d["devid"], "generation", d["generation"], "verdict", v["state"])
PY
# the text output starts with the same verdict, and the exit code matches it
rc2=0
BTRFS_SCAN_GATE_LOG=stderr "$helper" status >"$work/status.txt" 2>>"$work/status.err" || rc2=$?
[ "$rc2" = "$rc" ] || fail "status exited $rc2, status --json $rc"
want=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"]["text"])' "$work/status.json")
[ "$(head -n1 "$work/status.txt")" = "$want" ] || { head -n3 "$work/status.txt"; fail "the first line of status is not the verdict '$want'"; }
echo "PASS: status --json leads with the verdict (the first line of status), is strict JSON with the hostile label escaped, nulls for absent values, typed numbers"

#!/usr/bin/env python3
# Not part of the build: regenerates cases.tsv from this readable list (tabs are easy to get wrong by hand).
FS = "7e57ba0d-0000-4000-8000-000000000001"
D = "--dry-run udev $DEV"
cases = [
# name, setup, args, status, stderr, stdout, seconds
("usage-no-command", "-", "-", 2, "missing command (udev, trust, boot, reconcile, status)", "-", 10),
("usage-unknown-command", "-", "frobnicate", 2, "unknown command 'frobnicate'", "-", 10),
("usage-udev-no-devnode", "-", "udev", 2, "udev: expected exactly one DEVNODE", "-", 10),
("usage-udev-two-devnodes", "-", "udev $DEV $DEV", 2, "udev: expected exactly one DEVNODE", "-", 10),
("usage-unknown-option", "-", "--frobnicate udev $DEV", 2, "btrfs-scan-gate: unrecognized option '--frobnicate'", "-", 10),
("usage-status-unknown-option", "-", "status --bogus", 2, "btrfs-scan-gate status: unrecognized option '--bogus'", "-", 10),
("usage-timeout-not-a-number", "-", "--timeout abc udev $DEV", 2, "--timeout: expected seconds in (0, 3600], got 'abc'", "-", 10),
("usage-timeout-zero", "-", "--timeout 0 udev $DEV", 2, "--timeout: expected seconds in (0, 3600], got '0'", "-", 10),
("usage-timeout-huge", "-", "--timeout 1e9 udev $DEV", 2, "--timeout: expected seconds in (0, 3600], got '1e9'", "-", 10),
("usage-json-with-udev", "-", "--json udev $DEV", 2, "udev: option not valid for this command", "-", 10),
("valid-baseline", "-", D, 0, "-", f"BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_REASON=unique BTRFS_SCAN_GATE_FSID={FS} BTRFS_SCAN_GATE_CSUM=verified !BTRFS_SCAN_GATE_ERROR=*", 10),
# the device
("truncated-64k", "truncate=65536", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_REASON=not-btrfs !BTRFS_SCAN_GATE_FSID=*", 10),
("truncated-mid-superblock", "truncate=67584", D, 0, "$DEV: invalid btrfs superblock: device too small for a superblock at 64 KiB", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("truncated-68k-minus-1", "truncate=69631", D, 0, "invalid btrfs superblock: device too small", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("empty-device", "dev=zero:0", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_REASON=not-btrfs", 10),
("zeroed-device", "dev=zero:1048576", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_REASON=not-btrfs", 10),
("bad-magic", "poke=0x40:_BHRfS_X recsum", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_REASON=not-btrfs", 10),
("bad-checksum", r"poke=0x0:\x00\x00\x00\x00", D, 0, "$DEV: invalid btrfs superblock: checksum mismatch", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=invalid-superblock !BTRFS_SCAN_GATE_FSID=*", 10),
("bad-checksum-field-changed", r"poke=0x48:\xff", D, 0, "invalid btrfs superblock: checksum mismatch", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("unknown-csum-type", r"poke=0xc4:\x63\x00 recsum", D, 0, "invalid btrfs superblock: unknown checksum type", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("sha256-csum-not-verified", r"poke=0xc4:\x02\x00 poke=0x0:\xde\xad", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_CSUM=not-verified", 10),
("bytenr-wrong", r"poke=0x30:\x00\x00\x02\x00\x00\x00\x00\x00 recsum", D, 0, "invalid btrfs superblock: bytenr is not 65536", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("num-devices-zero", r"poke=0x88:\x00\x00\x00\x00\x00\x00\x00\x00 recsum", D, 0, "invalid btrfs superblock: num_devices is 0", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("num-devices-absurd", r"poke=0x88:\xff\xff\xff\xff\xff\xff\xff\x7f recsum", D, 0, "invalid btrfs superblock: num_devices is absurd", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("num-devices-2-twin-missing", r"poke=0x88:\x02 recsum", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_REASON=multi-device ID_BTRFS_READY=0", 10),
("sectorsize-not-power-of-2", r"poke=0x90:\x00\x18\x00\x00 recsum", D, 0, "invalid btrfs superblock: sectorsize is not a power of two", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("nodesize-zero", r"poke=0x94:\x00\x00\x00\x00 recsum", D, 0, "invalid btrfs superblock: nodesize is not a power of two", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("sys-chunk-array-size-absurd", r"poke=0xa0:\xff\xff\x00\x00 recsum", D, 0, "invalid btrfs superblock: sys_chunk_array_size too large", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("devid-zero", r"poke=0xc9:\x00\x00\x00\x00\x00\x00\x00\x00 recsum", D, 0, "invalid btrfs superblock: devid is 0", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("dev-item-fsid-mismatch", r"poke=0x11b:\xee recsum", D, 0, "invalid btrfs superblock: dev_item fsid differs", "BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("label-not-nul-terminated", "fill=0x12b:256:0x41 recsum", D, 0, "invalid btrfs superblock: label not NUL-terminated", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=invalid-superblock", 10),
("label-255-bytes", "fill=0x12b:255:0x41 recsum", D, 0, "-", f"BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_REASON=unique BTRFS_SCAN_GATE_FSID={FS} !BTRFS_SCAN_GATE_ERROR=*", 10),
("label-hostile-bytes", r"poke=0x12b:a\sb\x22c\x27d\n\x00 recsum", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=scan", 10),
# the path
("path-with-comma", "devname=dev,1", D, 0, "$DEV: path contains ',' or whitespace or is longer than 4087 bytes", "BTRFS_SCAN_GATE_REASON=bad-path !BTRFS_SCAN_GATE_DECISION=scan", 10),
("path-with-space", r"devname=dev\s1", D, 0, "path contains ',' or whitespace", "BTRFS_SCAN_GATE_REASON=bad-path !BTRFS_SCAN_GATE_DECISION=scan", 10),
("path-with-newline", r"devname=dev\n1", D, 0, "path contains ',' or whitespace", "BTRFS_SCAN_GATE_REASON=bad-path !BTRFS_SCAN_GATE_DECISION=scan", 10),
("path-too-long", "longpath=4088", D, 0, "is longer than 4087 bytes", "BTRFS_SCAN_GATE_REASON=bad-path !BTRFS_SCAN_GATE_DECISION=scan", 10),
("path-at-limit", "longpath=4087", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_REASON=unique", 10),
("path-relative", "-", "--dry-run udev relative/dev0", 0, "-", "BTRFS_SCAN_GATE_DECISION=ignore !BTRFS_SCAN_GATE_DECISION=scan", 10),
("missing-device-node", "dev=none", D, 0, "$DEV: superblock read failed: No such file or directory", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_REASON=missing-device BTRFS_SCAN_GATE_ERROR=read-error", 10),
("device-is-a-directory", "dev=dir", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_ERROR=read-error", 10),
("device-vanishes-before-open", "shim=vanish reached=vanished", D, 0, "$DEV: superblock read failed: No such file or directory", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_REASON=missing-device BTRFS_SCAN_GATE_ERROR=read-error", 10),
("eio-mid-superblock", "shim=eio:66000 reached=eio", "udev $DEV", 0, "$DEV: superblock read failed: Input/output error", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=unreadable BTRFS_SCAN_GATE_ERROR=read-error", 10),
("device-vanishes-mid-read", "shim=short:66000 reached=short root", "udev $DEV", 0, "$DEV: invalid btrfs superblock: device too small for a superblock at 64 KiB", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=invalid-superblock !BTRFS_SCAN_GATE_FSID=* BTRFS_SCAN_GATE_ACTION=skipped", 10),
("device-vanishes-after-open", "shim=short:0 reached=short", "udev $DEV", 0, "-", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_REASON=not-btrfs !BTRFS_SCAN_GATE_FSID=* BTRFS_SCAN_GATE_ACTION=none", 10),
("symlink-swapped-between-checks", "link shim=swap reached=swapped", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=ignore BTRFS_SCAN_GATE_REASON=not-btrfs", 10),
("fifo-blocks-open", "dev=fifo", "udev --timeout 2 $DEV", 0, "$DEV: superblock read did not finish within the timeout, ignoring", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=in-doubt BTRFS_SCAN_GATE_ERROR=read-timeout", 4),
("read-blocks", "shim=block reached=blocking", "udev --timeout 2 $DEV", 0, "$DEV: superblock read did not finish within the timeout, ignoring", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=in-doubt BTRFS_SCAN_GATE_ERROR=read-timeout", 4),
# the kernel interface
("control-missing", "control=missing root", "udev $DEV", 0, "btrfs-control: btrfs not loaded, not ready", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_ERROR=not-ready ID_BTRFS_READY=1", 10),
("control-not-a-device", "control=file root", "udev $DEV", 0, "$DEV: scan failed, ignoring: Inappropriate ioctl for device", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_ERROR=scan-failed ID_BTRFS_READY=1", 10),
("skip-scan-absent", "skipscan=missing root", "udev $DEV", 0, "-", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_ERROR=skip-scan-absent,scan-failed", 10),
("skip-scan-read-only", "skipscan=ro root", "udev $DEV", 0, "/sys/module/btrfs/parameters/skip_scan is read-only: skip list not applied", "BTRFS_SCAN_GATE_ERROR=skip-scan-read-only,scan-failed", 10),
("skip-scan-write-fails", "skipscan=erofs reached=erofs root", "udev $DEV", 0, "cannot write /sys/module/btrfs/parameters/skip_scan, ignoring: Read-only file system", "BTRFS_SCAN_GATE_ERROR=skip-scan-write-failed,scan-failed", 10),
("skip-list-too-long", "dev=img:clone longpath=4087 loopclone", "udev $DEV", 0, "device(s) left out of it, still never scanned by this helper: ", "BTRFS_SCAN_GATE_DECISION=skip BTRFS_SCAN_GATE_REASON=clone BTRFS_SCAN_GATE_ERROR=skip-list-too-long", 10),
# configuration, command line, mountinfo, state
("config-line-without-equals", r"config=active_slot=A\nthis\sline\shas\sno\sequals\n", D, 0, "$T/btrfs-scan-gate.conf:2: expected KEY=VALUE, ignoring line", "BTRFS_SCAN_GATE_ERROR=config-invalid BTRFS_SCAN_GATE_DECISION=scan", 10),
("config-unknown-key", r"config=\n\ncolour=blue\n", D, 0, "$T/btrfs-scan-gate.conf:3: unknown key, ignoring line", "BTRFS_SCAN_GATE_ERROR=config-invalid", 10),
("config-empty-key", r"config=\s=value\n", D, 0, "btrfs-scan-gate.conf:1: empty key, ignoring line", "BTRFS_SCAN_GATE_ERROR=config-invalid", 10),
("config-bad-slot-name", r"config=active_slot=A\sB\n", D, 0, "btrfs-scan-gate.conf:1: active_slot: not a slot name, ignoring line", "BTRFS_SCAN_GATE_ERROR=config-invalid", 10),
("config-too-many-suffixes", r"config=slot_suffixes=-a,-b,-c,-d,-e,-f,-g,-h,-i\n", D, 0, "btrfs-scan-gate.conf:1: slot_suffixes: expected 1 to 8 comma-separated suffixes", "BTRFS_SCAN_GATE_ERROR=config-invalid", 10),
("config-bad-clone-policy", r"config=clone_policy=sometimes\n", D, 0, "btrfs-scan-gate.conf:1: clone_policy: expected skip-all or active", "BTRFS_SCAN_GATE_ERROR=config-invalid", 10),
("config-line-too-long", r"config=#\n$X2000\n", D, 0, "btrfs-scan-gate.conf:2: line too long, ignoring line", "BTRFS_SCAN_GATE_ERROR=config-invalid", 10),
("config-nul-byte", r"config=active_slot=A\x00B\n", D, 0, "btrfs-scan-gate.conf:1: NUL byte in line, ignoring line", "BTRFS_SCAN_GATE_ERROR=config-invalid", 10),
("config-is-a-directory", "-", "--config $T --dry-run udev $DEV", 0, "cannot read $T, using defaults: Is a directory", "BTRFS_SCAN_GATE_ERROR=config-unreadable BTRFS_SCAN_GATE_DECISION=scan", 10),
("config-explicit-missing", "-", "--config $T/nonexistent.conf --dry-run udev $DEV", 0, "cannot read $T/nonexistent.conf, using defaults: No such file or directory", "BTRFS_SCAN_GATE_ERROR=config-unreadable", 10),
("config-default-missing", "-", D, 0, "-", "!BTRFS_SCAN_GATE_ERROR=*", 10),
("cmdline-unknown-slot-values", r"env=DEVNAME=$DEV env=ID_PART_ENTRY_NAME=rootfs-A cmdline=btrfs-scan-gate.slot=%%%\srauc.slot=\sandroidboot.slot_suffix=_\sroot=PARTLABEL=\ssteamos.efi=bogus\n", D, 0, "-", "BTRFS_SCAN_GATE_SLOT=A !BTRFS_SCAN_GATE_SLOT_ACTIVE=* !BTRFS_SCAN_GATE_ERROR=*", 10),
("cmdline-binary-garbage", r"cmdline=\x00\xff\x22\x22\x22root=\x01\x00\x00btrfs-scan-gate.slot=\x22", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=scan", 10),
("cmdline-missing", "cmdline=@missing", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=scan", 10),
# systemd-boot's LoaderDevicePartUUID (issue 18 item 1): malformed or unreadable is said and ignored,
# never a crash; the boot then names no disk and the fallback decides
("efivar-malformed-utf16", r"efivar=\x06\x00\x00\x00A\x00B\x00\xd8", D, 0, "not a partition GUID in UTF-16LE", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_TRUST_SOURCE=fallback !BTRFS_SCAN_GATE_ERROR=*", 10),
("efivar-attributes-only", r"efivar=\x06\x00\x00", D, 0, "not a partition GUID in UTF-16LE", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_TRUST_SOURCE=fallback", 10),
# there but unreadable: no anchor and no fallback, only trusted_disk= (the test seam names $DEV)
("efivar-unreadable", "efivar=@dir", D, 0, "cannot read", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_TRUST_SOURCE=trusted-disk-only", 10),
# a variable naming a partition that is not there (yet): trust narrows until it appears, never the class
("efivar-names-nothing", r"efivar=\x06\x00\x00\x00" + "".join(c + r"\x00" for c in "12345678-1234-4234-8234-123456789abc") + r"\x00\x00", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_TRUST_SOURCE=trusted-disk-only", 10),
# non-volatile (attributes 7): systemd-boot's is volatile, so the running system wrote this one
("efivar-non-volatile", r"efivar=\x07\x00\x00\x00" + "".join(c + r"\x00" for c in "12345678-1234-4234-8234-123456789abc") + r"\x00\x00", D, 0, "non-volatile", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_TRUST_SOURCE=fallback", 10),
("efivar-junk-after-nul", r"efivar=\x06\x00\x00\x00" + "".join(c + r"\x00" for c in "12345678-1234-4234-8234-123456789abc") + r"\x00\x00x\x00", D, 0, "not a partition GUID in UTF-16LE", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_TRUST_SOURCE=fallback", 10),
("mountinfo-garbage", r"mountinfo=-\s-\s-\s-\s-\s-\s-\s-\n\n1\s2\n\x00\xff", D, 0, "-", "BTRFS_SCAN_GATE_DECISION=scan", 10),
("state-file-garbage", r"state=garbage\n7:0\s1\n99999999999:1\s1\s1\s1\s1\s1\snot-a-uuid\s/dev/x\n\x01\x02\n", "udev $DEV", 0, "-", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_REASON=unique", 10),
("udev-env-hostile-partlabel", r"env=DEVNAME=$DEV env=ID_PART_ENTRY_NAME=my\sroot\x22fs\x27-A", D, 0, "-", r"BTRFS_SCAN_GATE_SLOT=A BTRFS_SCAN_GATE_SLOT_BASE=my\\x20root\\x22fs\\x27", 10),
("udev-env-long-partlabel", r"env=DEVNAME=$DEV env=ID_PART_ENTRY_NAME=$X300-A", D, 0, "-", "BTRFS_SCAN_GATE_SLOT= !BTRFS_SCAN_GATE_SLOT_ACTIVE=*", 10),
# issue 10 item 6: a partition label is the attacker's on removable media; SLOT_BASE feeds SYMLINK+=
("udev-env-partlabel-slash-dotdot", r"env=DEVNAME=$DEV env=ID_PART_ENTRY_NAME=x/../../sda-A", D, 0, "-", r"BTRFS_SCAN_GATE_SLOT=A BTRFS_SCAN_GATE_SLOT_BASE=x\\x2f..\\x2f..\\x2fsda", 10),
("udev-env-partlabel-dotdot", r"env=DEVNAME=$DEV env=ID_PART_ENTRY_NAME=..-A", D, 0, "-", "BTRFS_SCAN_GATE_SLOT=A BTRFS_SCAN_GATE_SLOT_BASE=", 10),
("udev-env-partlabel-blank-quote", r"env=DEVNAME=$DEV env=ID_PART_ENTRY_NAME=a\s\x22b-A", D, 0, "-", r"BTRFS_SCAN_GATE_SLOT_BASE=a\\x20\\x22b", 10),
# operating it (issue 20 item 5): rights, exit status of status/boot/reconcile
("needs-root-status", "user=nobody", "status", 1, "btrfs-scan-gate: status: needs root", "-", 10),
("needs-root-boot", "user=nobody", "boot", 1, "btrfs-scan-gate: boot: needs root", "!skip_scan=*", 10),
("needs-root-reconcile", "user=nobody", "--dry-run reconcile", 1, "btrfs-scan-gate: reconcile: needs root", "!skip_scan=*", 10),
("reconcile-no-inventory", "root", "--dry-run reconcile", 1, "no inventory ($T/run/devices): nothing to reconcile", "!skip_scan=*", 10),
("status-config-invalid", r"root skipscan=upstream config=colour=blue\n", "status", 3, "the configuration has errors", "-", 10),
("boot-dry-run-config-invalid", r"root config=colour=blue\n", "--dry-run boot", 3, "the configuration has errors", "skip_scan=*", 10),
("status-valid-config", r"root skipscan=upstream config=clone_policy=skip-all\n", "status", 0, "-", "-", 10),
# the run directory and the lock
("rundir-is-a-file", "rundir=file root", "udev $DEV", 0, "cannot take the lock in $T/run", "BTRFS_SCAN_GATE_ERROR=lock-failed BTRFS_SCAN_GATE_DECISION=scan", 10),
("rundir-missing", "rundir=missing root", "udev $DEV", 0, "-", "BTRFS_SCAN_GATE_ERROR=scan-failed", 10),
("lock-held-past-timeout", "holdlock=4 root", "udev --timeout 2 $DEV", 0, "cannot take the lock in $T/run", "BTRFS_SCAN_GATE_ERROR=lock-timeout BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_ACTION=none", 4),
("lock-race-4", "race=4 root", "udev $DEV", 0, "-", "BTRFS_SCAN_GATE_DECISION=scan BTRFS_SCAN_GATE_ERROR=scan-failed", 10),
]
import os
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "cases.tsv"), "w") as f:
    f.write("# Bad-input catalogue of btrfs-scan-gate: one CTest test per row (tests/badinput/run-case.c says how a\n")
    f.write("# row is read; docs/bad-input.md explains each). Generated by gen-cases.py; edit that, not this.\n")
    f.write("# name\tsetup\targs\tstatus\tstderr\tstdout\tseconds\n")
    for c in cases:
        assert len(c) == 7 and "\t" not in "".join(map(str, c)), c
        f.write("\t".join(map(str, c)) + "\n")
# the table of docs/bad-input.md (the text around it is written by hand)
def cell(v, dash):
    v = str(v)
    return "\u2014" if v == "-" and dash else "`%s`" % v.replace("|", "\\|")
rows = ["| case | input | command | exit | message on stderr (substring) | stdout must contain | s |", "|---|---|---|---|---|---|---|"]
for n, setup, args, status, err, out, sec in cases:
    rows.append("| `%s` | %s | %s | %s | %s | %s | %s |" % (n, cell(setup, False), cell(args, False), status, cell(err, True), cell(out, True), sec))
doc = os.path.join(here, "../../docs/bad-input.md")
text = open(doc).read().split("\n")
start = text.index(rows[0])
end = start
while end < len(text) and text[end].startswith("|"):
    end += 1
open(doc, "w").write("\n".join(text[:start] + rows + text[end:]))
print(len(cases), "cases")

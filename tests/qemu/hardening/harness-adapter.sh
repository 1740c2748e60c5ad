# shellcheck shell=bash
# The few things the hardening drivers (crash-safety.sh, bench/kernel/run.sh) need from the QEMU
# harness, in one place. Sourced, not run.
#
#   harness_prereqs                 0 when usable, else 1 with $HARNESS_MISSING set
#   harness_make_disks DIR          fresh clone2 images in DIR (persist across boots)
#   harness_disk_name I             file name of disk I (0 = vda, 1 = vdb) inside DIR
#   harness_initramfs SCRIPT OUT [EXTRA_FILE...]
#                                   initramfs running SCRIPT as the case; EXTRA_FILEs land in /bin
#   harness_qemu DIR INITRD LOG [QEMU ARGS...]
#                                   boot (TCG) with DIR's disks; console to LOG
#   harness_passed LOG              0 when the console says the case passed
#
# If the harness's own library is present it is used; until then (and as long as it lacks
# persistent disks or extra QEMU arguments) the fallback below builds the same guest the
# contract describes (docs/CONTRACT.md "QEMU case scripts") from the cached Debian kernel.

BSG_CACHE=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
BSG_MODULE=${BSG_MODULE:-patched}
HARNESS_MISSING=

# the cached kernel tree: newest extracted linux-image under the cache, or BSG_KROOT
_hd_kroot() {
	local k
	if [ -n "${BSG_KROOT:-}" ]; then
		echo "$BSG_KROOT"
		return
	fi
	for k in "$BSG_CACHE"/*/boot/vmlinuz-6.1.* "$BSG_CACHE"/*/*/boot/vmlinuz-6.1.*; do
		[ -e "$k" ] && { dirname "$(dirname "$k")"; return; }
	done
}

_hd_btrfs_ko() {
	local f
	if [ -n "${BSG_BTRFS_KO:-}" ]; then
		echo "$BSG_BTRFS_KO"
		return
	fi
	if [ "$BSG_MODULE" = stock ]; then
		find "$(_hd_kroot)/lib/modules" -name btrfs.ko 2>>"${work:-/tmp}/adapter.log" | head -n 1
		return
	fi
	for f in "$BSG_CACHE"/*"$BSG_MODULE"*/btrfs.ko "$BSG_CACHE"/*/"$BSG_MODULE"/btrfs.ko \
		"$BSG_CACHE"/*/*"$BSG_MODULE"*/btrfs.ko; do
		[ -e "$f" ] && { echo "$f"; return; }
	done
}

harness_prereqs() {
	local t
	for t in qemu-system-x86_64 busybox btrfs mkfs.btrfs od gzip; do
		command -v "$t" >/dev/null || { HARNESS_MISSING="$t not installed"; return 1; }
	done
	HD_KROOT=$(_hd_kroot)
	[ -n "$HD_KROOT" ] || { HARNESS_MISSING="no 6.1 kernel under $BSG_CACHE (set BSG_KROOT)"; return 1; }
	HD_KERNEL=$(ls "$HD_KROOT"/boot/vmlinuz-6.1.* | head -n 1)
	HD_KVER=${HD_KERNEL##*/vmlinuz-}
	HD_BTRFS_KO=$(_hd_btrfs_ko)
	[ -n "$HD_BTRFS_KO" ] && [ -e "$HD_BTRFS_KO" ] ||
		{ HARNESS_MISSING="no $BSG_MODULE btrfs.ko under $BSG_CACHE (set BSG_BTRFS_KO)"; return 1; }
	echo "harness-adapter: kernel $HD_KERNEL, module $HD_BTRFS_KO"
}

harness_disk_name() { case $1 in 0) echo clone-a.img ;; 1) echo clone-b.img ;; esac; }

# the contract's clone2: two byte-identical single-device images with a fixed fsid
harness_make_disks() {
	local d=$1
	rm -f "$d/clone-a.img" "$d/clone-b.img"
	truncate -s 512M "$d/clone-a.img"
	mkfs.btrfs -f -L clone -U 5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a01 "$d/clone-a.img"
	cp --sparse=always "$d/clone-a.img" "$d/clone-b.img"
}

_hd_copy_bin() { # _hd_copy_bin ROOT BINARY: binary plus its shared libraries and loader
	local r=$1 b=$2 l
	cp "$b" "$r/bin/"
	for l in $(ldd "$b" | grep -o '/[^ ]*'); do
		mkdir -p "$r$(dirname "$l")"
		cp -L "$l" "$r$l"
	done
}

harness_initramfs() {
	local script=$1 out=$2 r m e
	shift 2
	out=$(realpath "$out")
	r=$(mktemp -d "${work:-/var/tmp}/initramfs.XXXXXX")
	mkdir -p "$r"/{bin,lib,lib64,proc,sys,dev,tmp,modules}
	cp "$(command -v busybox)" "$r/bin/busybox"
	for m in $(busybox --list); do [ -e "$r/bin/$m" ] || ln -s busybox "$r/bin/$m"; done
	for m in btrfs mkfs.btrfs blkid; do _hd_copy_bin "$r" "$(command -v "$m")"; done
	for e in "$@"; do cp "$e" "$r/bin/"; done
	for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk \
		crc32c_generic libcrc32c xor raid6_pq zstd_compress; do
		cp "$(find "$HD_KROOT/lib/modules/$HD_KVER" -name "$m.ko" | head -n 1)" "$r/modules/"
	done
	cp "$HD_BTRFS_KO" "$r/modules/btrfs.ko"
	cat >"$r/lib/guest-lib.sh" <<'EOF'
log() { echo "guest: $*"; }
pass() { echo "CASE-RESULT: PASS"; exit 0; }
fail() { echo "CASE-RESULT: FAIL: $*"; exit 1; }
must() { "$@" || fail "must: $* (exit $?)"; }
must_fail() { if "$@"; then fail "must_fail: succeeded: $*"; fi; }
EOF
	cp "$script" "$r/case.sh"
	cat >"$r/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk \
	crc32c_generic libcrc32c xor raid6_pq zstd_compress btrfs; do
	insmod /modules/$m.ko || echo "guest: insmod $m failed"
done
n=0
while [ ! -b /dev/vdb ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n + 1)); done
sh /case.sh
echo "CASE-EXIT: $?"
poweroff -f
EOF
	chmod +x "$r/init" "$r/case.sh"
	(cd "$r" && find . | busybox cpio -o -H newc | gzip -1) >"$out"
	rm -rf "$r"
}

harness_qemu() {
	local d=$1 initrd=$2 log=$3
	shift 3
	timeout "${boot_timeout:-600}" qemu-system-x86_64 -cpu max -smp 2 -m 1024 -nographic -no-reboot \
		-net none -kernel "$HD_KERNEL" -initrd "$initrd" \
		-append "console=ttyS0 quiet panic=-1 ${BSG_QEMU_APPEND:-}" \
		-drive "file=$d/clone-a.img,format=raw,if=none,id=d0" -device virtio-blk-pci,drive=d0,serial=clone-a \
		-drive "file=$d/clone-b.img,format=raw,if=none,id=d1" -device virtio-blk-pci,drive=d1,serial=clone-b \
		"$@" >"$log" 2>&1 </dev/null
}

harness_passed() { grep -aq 'CASE-EXIT: 0' "$1"; }

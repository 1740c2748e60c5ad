# shellcheck shell=bash
# The QEMU harness's library, sourced by setup.sh, run-case.sh and the drivers that build on it
# (tests/qemu/udev/, tests/qemu/hardening/, bench/kernel/). See tests/qemu/README.md.
#
#   qemu_kernel KVER_SERIES          sets QK_ROOT, QK_KERNEL, QK_KVER for "6.1" or "6.12"
#   qemu_btrfs_ko stock|patched      prints the btrfs.ko to use (builds+caches the patched one;
#                                    env BSG_BTRFS_KO=PATH: that patched module instead)
#   qemu_make_disks LAYOUT DIR       writes DIR/disk0.img ... and DIR/disks.args (qemu -drive args)
#   qemu_initramfs CASE OUT KO [MODPARAMS]   busybox+btrfs-progs initramfs running CASE as /case.sh;
#                                    extra files: env QEMU_EXTRA_FILES="src:dst src:dst" (dst in guest),
#                                    extra binaries with their libraries: QEMU_EXTRA_BINS="path ...";
#                                    modules of the image after btrfs: kmods='a b' in CASE's header
#   qemu_boot INITRD LOG DIR [QEMU ARGS...]  boots with DIR/disks.args; console to LOG
#   qemu_verdict LOG                 prints the case's exit status from the console (or 124/125)

BSG_CACHE=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
QEMU_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
QEMU_REPO=$(cd "$QEMU_HERE/../.." && pwd)
QEMU_FSID=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a01

qemu_log() { echo "qemu-harness: $*" >&2; }

qemu_kernel() {
    local series=$1 env
    case $series in
    6.1)
        env=$BSG_CACHE/kernel-6.1.env
        [ -e "$env" ] || { qemu_log "no $env: run tests/qemu/setup.sh"; return 1; }
        . "$env"
        QK_ROOT=$BSG_CACHE/image-$SRCVER/root
        ;;
    6.12)
        env=$BSG_CACHE/kernel-6.12.env
        [ -e "$env" ] || { qemu_log "no $env: run tests/qemu/setup.sh"; return 1; }
        . "$env"
        QK_ROOT=$BSG_CACHE/image612-$VER612/root
        ;;
    *) qemu_log "unknown kernel series '$series'"; return 1 ;;
    esac
    QK_KERNEL=$(ls "$QK_ROOT"/boot/vmlinuz-* 2>/dev/null | head -n 1)
    [ -n "$QK_KERNEL" ] || { qemu_log "no kernel image under $QK_ROOT"; return 1; }
    QK_KVER=${QK_KERNEL##*/vmlinuz-}
    QK_SERIES=$series
}

# the series' identity: hash of the series file and every patch it names, in order, and of the
# mutant (BSG_MUTANT=NAME: tests/qemu/mutants/NAME.sh, see there) when one is asked for
qemu_series_hash() {
    local dir=$QEMU_REPO/kernel-patches/6.1 p
    {
        if [ -f "$dir/series" ]; then
            cat "$dir/series"
            while read -r p; do
                case $p in ''|'#'*) continue ;; esac
                cat "$dir/$p"
            done <"$dir/series"
        fi
        [ -z "${BSG_MUTANT:-}" ] || cat "$QEMU_HERE/mutants/$BSG_MUTANT.sh"
    } | sha256sum | cut -c1-16
}

# unpacked fs/btrfs (+ docs and checkpatch) of the 6.1 source, once per source version
qemu_source_tree() {
    local src=$BSG_CACHE/src-$SRCVER
    if [ ! -e "$src/.done" ]; then
        rm -rf "$src" && mkdir -p "$src"
        tar -C "$src" --strip-components=1 -xJf /usr/src/linux-source-6.1.tar.xz --wildcards \
            'linux-source-6.1/fs/btrfs/*' 'linux-source-6.1/Documentation/filesystems/btrfs.rst' \
            'linux-source-6.1/scripts/checkpatch.pl' 'linux-source-6.1/scripts/spelling.txt' \
            'linux-source-6.1/scripts/const_structs.checkpatch'
        touch "$src/.done"
    fi
    echo "$src"
}

# qemu_build_patched: btrfs.ko with kernel-patches/6.1/series applied, cached by version+hash.
# Each patch is applied and the module rebuilt after it (incremental after the first), so the
# build proves that every prefix of the series builds; a compiler warning in fs/btrfs fails it.
# checkpatch.pl --strict of the same source tree runs on each patch; its report is kept next to
# the module (checkpatch.log) and its error/warning count must be 0.
qemu_build_patched() {
    local hash out tree dir=$QEMU_REPO/kernel-patches/6.1 p src
    hash=$(qemu_series_hash)
    out=$BSG_CACHE/btrfs-$SRCVER-$hash
    if [ -e "$out/btrfs.ko" ]; then
        echo "$out/btrfs.ko"
        return 0
    fi
    src=$(qemu_source_tree) || return 1
    mkdir -p "$BSG_CACHE/locks"
    (
        flock -w 1200 9 || { qemu_log "timed out waiting for the module build lock"; exit 1; }
        [ -e "$out/btrfs.ko" ] && exit 0
        tree=$(mktemp -d "$BSG_CACHE/build.XXXXXX")
        trap 'rm -rf "$tree"' EXIT
        cp -a "$src/." "$tree/"
        : >"$tree/all-build.log"
        : >"$tree/checkpatch.log"
        while read -r p; do
            case $p in ''|'#'*) continue ;; esac
            qemu_log "applying $p"
            patch -d "$tree" -p1 --batch --forward <"$dir/$p" >"$tree/patch.log" 2>&1 ||
                { cat "$tree/patch.log" >&2; qemu_log "$p does not apply"; exit 1; }
            # UNKNOWN_COMMIT_ID: the source is a release tarball, no git history in which
            # checkpatch could look up the upstream commits a message names (their form is checked)
            (cd "$tree" && perl scripts/checkpatch.pl --strict --no-tree --no-signoff \
                --ignore UNKNOWN_COMMIT_ID "$dir/$p") >>"$tree/checkpatch.log" 2>&1 || true
            if grep -Eq '^(ERROR|WARNING):' "$tree/checkpatch.log"; then
                grep -E -A3 '^(ERROR|WARNING):' "$tree/checkpatch.log" >&2
                qemu_log "checkpatch --strict: errors or warnings in $p"
                exit 1
            fi
            [ -z "${BSG_MUTANT:-}" ] || continue    # a mutant is built once, at the end
            qemu_log "building btrfs.ko with the series up to $p against linux-headers-$ABI"
            make -C "/usr/src/linux-headers-$ABI" M="$tree/fs/btrfs" -j"$(nproc)" modules \
                >"$tree/build.log" 2>&1 || { tail -n 40 "$tree/build.log" >&2; qemu_log "$p does not build"; exit 1; }
            if grep -q 'warning:' "$tree/build.log"; then
                grep -A3 'warning:' "$tree/build.log" >&2
                qemu_log "the build with the series up to $p has compiler warnings"
                exit 1
            fi
            { echo "== up to $p"; cat "$tree/build.log"; } >>"$tree/all-build.log"
        done < <(grep -v '^[[:space:]]*$' "$dir/series")
        if [ -n "${BSG_MUTANT:-}" ]; then
            local m=$QEMU_HERE/mutants/$BSG_MUTANT.sh before
            [ -f "$m" ] || { qemu_log "no mutant $m"; exit 1; }
            before=$(cat "$tree"/fs/btrfs/*.[ch] | sha256sum)
            qemu_log "mutant $BSG_MUTANT: breaking the series on purpose"
            (cd "$tree/fs/btrfs" && sh "$m") || { qemu_log "mutant $BSG_MUTANT failed to apply"; exit 1; }
            [ "$(cat "$tree"/fs/btrfs/*.[ch] | sha256sum)" != "$before" ] ||
                { qemu_log "mutant $BSG_MUTANT changed nothing (stale pattern?)"; exit 1; }
            make -C "/usr/src/linux-headers-$ABI" M="$tree/fs/btrfs" -j"$(nproc)" modules \
                >"$tree/build.log" 2>&1 || { tail -n 40 "$tree/build.log" >&2; exit 1; }
            cp "$tree/build.log" "$tree/all-build.log"
        fi
        mkdir -p "$out"
        cp "$tree/fs/btrfs/btrfs.ko" "$tree/checkpatch.log" "$out/"
        cp "$tree/all-build.log" "$out/build.log"
    ) 9>"$BSG_CACHE/locks/build-$SRCVER" || return 1
    echo "$out/btrfs.ko"
}

qemu_btrfs_ko() {
    case $1 in
    stock) find "$QK_ROOT/lib/modules/$QK_KVER" -name 'btrfs.ko*' | head -n 1 ;;
    patched)
        [ "$QK_SERIES" = 6.1 ] || { qemu_log "patched module exists for 6.1 only"; return 1; }
        # BSG_BTRFS_KO=PATH: boot this patched btrfs.ko instead of the harness's own build
        # (tests/packaging/dkms-qemu-smoke hands it the module dkms built)
        if [ -n "${BSG_BTRFS_KO:-}" ]; then
            [ -e "$BSG_BTRFS_KO" ] || { qemu_log "BSG_BTRFS_KO=$BSG_BTRFS_KO does not exist"; return 1; }
            echo "$BSG_BTRFS_KO"
            return 0
        fi
        qemu_build_patched
        ;;
    *) qemu_log "unknown module '$1'"; return 1 ;;
    esac
}

# modules needed before btrfs, dependencies first, from the image's modules.dep
qemu_module_order() {
    local dep=$QK_ROOT/lib/modules/$QK_KVER/modules.dep
    local -A seen=()
    _qmo_visit() {
        local m=$1 d
        [ -n "${seen[$m]:-}" ] && return
        seen[$m]=1
        for d in $(awk -v m="$m" -F': *' '$1 == m { print $2 }' "$dep"); do
            _qmo_visit "$d"
        done
        echo "$m"
    }
    local want m
    # QEMU_EXTRA_MODULES: more drivers by file name (the USB mass-storage stack of `steamos-usb`)
    for want in virtio_pci virtio_blk crc32c_generic ${QEMU_EXTRA_MODULES:-} btrfs; do
        m=$(grep -oE "^[^:]*/$want\.ko(\.[a-z]+)?:" "$dep" | tr -d :)
        [ -n "$m" ] && _qmo_visit "$m"   # empty: built in
    done
}

qemu_make_disks() {
    local layout=$1 d=$2 size=256M i
    local -a drive_opts=()   # more -drive options of a virtio disk, by index (throttling)
    # _qemu_sb_edit IMG OFFSET [fsid=UUID] [flags_or=N] [gen_add=N] [u64=OFF:N] [u64_or=OFF:N]
    # [uuid=OFF:UUID]: edit the btrfs superblock copy at OFFSET of IMG (fsid at 0x20, flags at
    # 0x38, generation at 0x48, all little endian; u64/u64_or/uuid write at byte OFF of the
    # superblock, decimal or 0x hex) and store the new crc32c of bytes 0x20..0xfff in the first
    # 4 bytes. perl-base is Essential.
    _qemu_sb_edit() {
        perl -e '
            use strict; use warnings;
            my ($img, $off, @ops) = @ARGV;
            open(my $fh, "+<:raw", $img) or die "$img: $!\n";
            sysseek($fh, $off, 0) or die "seek: $!\n";
            sysread($fh, my $sb, 4096) == 4096 or die "$img: short read at $off\n";
            substr($sb, 0x40, 8) eq "_BHRfS_M" or die "$img: no btrfs superblock at $off\n";
            for (@ops) {
                my ($k, $v) = split /=/, $_, 2;
                if ($k eq "fsid") {
                    (my $h = $v) =~ s/-//g;
                    substr($sb, 0x20, 16) = pack("H32", $h);
                } elsif ($k eq "flags_or") {
                    substr($sb, 0x38, 8) = pack("Q<", unpack("Q<", substr($sb, 0x38, 8)) | $v);
                } elsif ($k eq "gen_add") {
                    substr($sb, 0x48, 8) = pack("Q<", unpack("Q<", substr($sb, 0x48, 8)) + $v);
                } elsif ($k =~ /^(u64|u64_or|uuid)$/) {
                    my ($o, $x) = split /:/, $v, 2;
                    $o = oct($o) if $o =~ /^0/;
                    if ($k eq "uuid") {
                        (my $h = $x) =~ s/-//g;
                        substr($sb, $o, 16) = pack("H32", $h);
                    } else {
                        $x = unpack("Q<", substr($sb, $o, 8)) | $x if $k eq "u64_or";
                        substr($sb, $o, 8) = pack("Q<", $x);
                    }
                } else { die "unknown edit $k\n" }
            }
            my @t;
            for my $i (0 .. 255) {
                my $c = $i;
                $c = $c & 1 ? ($c >> 1) ^ 0x82F63B78 : $c >> 1 for 1 .. 8;
                $t[$i] = $c;
            }
            my $crc = 0xFFFFFFFF;
            $crc = $t[($crc ^ $_) & 0xFF] ^ ($crc >> 8) for unpack("C*", substr($sb, 0x20));
            substr($sb, 0, 4) = pack("V", $crc ^ 0xFFFFFFFF);
            sysseek($fh, $off, 0) or die "seek: $!\n";
            syswrite($fh, $sb) == 4096 or die "$img: short write\n";
        ' "$@"
    }
    mkdir -p "$d"
    rm -f "$d"/disk*.img "$d/modules.extra"
    local usb_disk='' usb_drive_opts='' sata_from=''
    case $layout in
    clone2)
        truncate -s $size "$d/disk0.img"
        mkfs.btrfs -q -f -L clone -U $QEMU_FSID "$d/disk0.img"
        cp --sparse=always "$d/disk0.img" "$d/disk1.img"
        truncate -s $size "$d/disk2.img"       # vdc: blank spare (device add/replace)
        serials=(clone-a clone-b spare)
        ;;
    raid1clone)
        truncate -s $size "$d/disk0.img" "$d/disk1.img"
        mkfs.btrfs -q -f -L raid -d raid1 -m raid1 -U $QEMU_FSID "$d/disk0.img" "$d/disk1.img"
        cp --sparse=always "$d/disk1.img" "$d/disk2.img"
        serials=(raid-a raid-b raid-b-clone)
        ;;
    single)
        truncate -s $size "$d/disk0.img"
        mkfs.btrfs -q -f -L single -U $QEMU_FSID "$d/disk0.img"
        serials=(single)
        ;;
    replace)
        # An interrupted device replace, made in the guest: vda a single-device filesystem (fsid
        # QEMU_FSID) holding 24 MiB of file data (mkfs --rootdir), vdb a blank target whose
        # writes QEMU throttles to 1 MiB/s, so the copy runs for about half a minute.
        truncate -s $size "$d/disk0.img" "$d/disk1.img"
        mkdir -p "$d/root"
        head -c $((24 << 20)) /dev/urandom >"$d/root/data"
        mkfs.btrfs -q -f -L replace -U $QEMU_FSID --rootdir "$d/root" "$d/disk0.img"
        rm -rf "$d/root"
        serials=(replace-src replace-tgt)
        drive_opts=([1]=,throttling.bps-write=1048576)
        ;;
    refusals)
        # What virtual_fsid must refuse, one filesystem per disk, each with its own fsid:
        # vda single (fsid QEMU_FSID) and vdb blank spare, for device add/remove/replace on a
        # virtual_fsid mount; vdc seed (btrfstune -S 1); vdd METADATA_UUID (btrfstune -M);
        # vde single with BTRFS_SUPER_FLAG_CHANGING_FSID_V2 (1 << 36) set in its primary superblock
        # (checksum recomputed), as an interrupted metadata_uuid change leaves it (6.1 refuses the
        # v1 flag, 1 << 35, for every mount: "unsupported super flag"); vdf+vdg raid1.
        local u=5c1a6e2f-0d3b-4c1e-9a7f-00000000f0
        truncate -s $size "$d"/disk{0,1,2,3,4,5,6}.img
        mkfs.btrfs -q -f -L single -U $QEMU_FSID "$d/disk0.img"
        mkfs.btrfs -q -f -L seed -U ${u}02 "$d/disk2.img"
        btrfstune -S 1 "$d/disk2.img"
        mkfs.btrfs -q -f -L metauuid -U ${u}03 "$d/disk3.img"
        btrfstune -M ${u}33 "$d/disk3.img"
        mkfs.btrfs -q -f -L fsidchange -U ${u}04 "$d/disk4.img"
        _qemu_sb_edit "$d/disk4.img" 65536 flags_or=$((1 << 36))
        _qemu_sb_edit "$d/disk4.img" $((64 << 20)) flags_or=$((1 << 36))   # the first mirror too, as btrfstune -m leaves it
        mkfs.btrfs -q -f -L raid -d raid1 -m raid1 -U ${u}05 "$d/disk5.img" "$d/disk6.img"
        btrfs inspect-internal dump-super "$d/disk4.img"
        serials=(single spare seed metauuid fsidchange raid-a raid-b)
        ;;
    metauuid-stick)
        # Crafted media naming another filesystem (upstream 197a9ecee68a's case): vda a plain
        # single-device filesystem (fsid QEMU_FSID); vdb and vdc each a fresh filesystem of its
        # own whose primary superblock is edited to claim vda's: incompat METADATA_UUID (1 << 10,
        # at 0xbc), metadata_uuid (0x23b) = vda's fsid, dev_item.fsid (0x11b) = vda's fsid,
        # dev_item.uuid (0x10b) = vda's device uuid, flags |= CHANGING_FSID_V2 (1 << 36),
        # generation (0x48) 999999; vdb keeps devid 1, vdc has dev_item.devid (0xc9) 2.
        local devuuid
        truncate -s $size "$d"/disk{0,1,2}.img
        mkfs.btrfs -q -f -L root -U $QEMU_FSID "$d/disk0.img"
        devuuid=$(btrfs inspect-internal dump-super "$d/disk0.img" | awk '$1 == "dev_item.uuid" { print $2 }')
        [ -n "$devuuid" ] || { qemu_log "no dev_item.uuid in disk0's superblock"; return 1; }
        for i in 1 2; do
            mkfs.btrfs -q -f -L stick$i -U 5c1a6e2f-0d3b-4c1e-9a7f-00000057c10$i "$d/disk$i.img"
            _qemu_sb_edit "$d/disk$i.img" 65536 u64_or=0xbc:$((1 << 10)) uuid=0x23b:$QEMU_FSID \
                uuid=0x11b:$QEMU_FSID uuid=0x10b:$devuuid flags_or=$((1 << 36)) u64=0x48:999999 \
                u64=0xc9:$i
            btrfs inspect-internal dump-super "$d/disk$i.img"
        done
        serials=(root stick-devid1 stick-devid2)
        ;;
    clone2-sbswap)
        # clone2 plus vdc, a third clone, and vdd (1 MiB) holding at 64 KiB a copy of the clones'
        # superblock with another fsid (5c1a6e2f-...-0bad0bad0bad), checksum recomputed. A guest
        # that writes it over vdc's superblock while vdc is being mounted makes the mount read
        # two fsids: registered with one, open_ctree() finds the other (the fsid mismatch error).
        # (Superblock mirrors can't do this: 6.1's btrfs_read_dev_super() reads only the primary.)
        truncate -s $size "$d/disk0.img"
        mkfs.btrfs -q -f -L clone -U $QEMU_FSID "$d/disk0.img"
        cp --sparse=always "$d/disk0.img" "$d/disk1.img"
        cp --sparse=always "$d/disk0.img" "$d/disk2.img"
        truncate -s 1M "$d/disk3.img"
        dd if="$d/disk0.img" of="$d/disk3.img" bs=4096 skip=16 seek=16 count=1 conv=notrunc
        _qemu_sb_edit "$d/disk3.img" 65536 fsid=5c1a6e2f-0d3b-4c1e-9a7f-0bad0bad0bad
        btrfs inspect-internal dump-super "$d/disk3.img"
        serials=(clone-a clone-b clone-c sb-swap)
        ;;
    steamos|steamos-ab|steamos-usb|steamos-2disk|steamos-stale|steamos-usbcraft|steamos-verity|raid-2disk|raid-2disk-stall)
        # SteamOS-like A/B: GPT partitions esp (vfat), rootfs-A/B and var-A/B (byte-identical btrfs
        # clones, fsids 5c1a6e2f-...-0a02 and -0a03), home (its own btrfs, -0a04). `steamos`: one
        # disk (serial steamos) holding all six. `steamos-ab`, for hotplug: disk0 (serial steamos-a)
        # holds esp, rootfs-A, var-A, home; disk1 (serial steamos-b) holds rootfs-B, var-B.
        # `steamos-usb`: the `steamos` disk plus a USB mass-storage disk (qemu-xhci + usb-storage,
        # serial usb0, removable=off: only its sysfs path says usb) with one GPT partition
        # `rootfs-A` holding a copy of rootfs whose superblock generation is 5 higher (crafted media).
        # `steamos-2disk`: the `steamos` disk plus a second fixed virtio disk (serial steamos-copy)
        # with partitions rootfs-A and rootfs-B holding the same rootfs (copies, same labels).
        # `steamos-stale`: the `steamos` disk plus two fixed 64 MiB virtio disks with a GPT and one
        # empty partition from 1 MiB whose whole-disk bytes still carry a btrfs superblock at 64 KiB,
        # as a disk once formatted whole, then partitioned (or one planted so) does: stale0 (partition
        # `data`) a copy of rootfs's superblock with generation 5 higher (registered, it would refuse
        # the mount of rootfs-A); stale1 (partition `data2`) one of a filesystem of its own (fsid
        # 5c1a6e2f-...-0a0e; no other copy: only the partitioned-disk rule keeps it out).
        # `steamos-usbcraft` (issue 18 case 1): the `steamos` disk plus a USB mass-storage disk
        # (as steamos-usb) with GPT partitions `stick1` and `stick2`, each a fresh mkfs.btrfs whose
        # superblock tests/host/craft-super.py edits to claim rootfs: METADATA_UUID with
        # metadata_uuid = dev_item.fsid = rootfs's fsid, rootfs's dev_item.uuid, CHANGING_FSID_V2,
        # generation 999999; stick1 devid 1, stick2 devid 2 of num_devices 2.
        # `steamos-verity` (issue 18 case 10): the `steamos` disk plus a fixed virtio disk (serial
        # verity) holding rootfs-A's dm-verity hash tree from block 0 (veritysetup format
        # --no-superblock, sha256, 4 KiB blocks) and at 4 MiB one line
        # "bsg-verity ROOTHASH SALT DATABLOCKS" the guest builds its table from, and a whole disk
        # (serial data, no partition table) holding a btrfs of its own (fsid 5c1a6e2f-...-0a0d).
        # `raid-2disk` (issue 18 item 1, a desktop's multi-device root): disk0 (serial raid-a) holds
        # esp and root1, disk1 (serial raid-b) holds root2: one btrfs raid1 (data and metadata) over
        # root1 (devid 1) and root2 (devid 2), fsid 5c1a6e2f-...-0a05, label raidroot.
        # mkfs runs on files that dd writes into the partitions' offsets (no loop device needed).
        local fs_root=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a02 fs_var=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a03
        local fs_home=5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a04 p n img label start
        local -a parts
        mkdir -p "$d/fs/rootdir/etc"
        echo "steamos-like rootfs" >"$d/fs/rootdir/etc/os-release"
        truncate -s 16M "$d/fs/esp.img"
        mkfs.vfat -n ESP -i 5c1a0e5f "$d/fs/esp.img"
        truncate -s 128M "$d/fs/rootfs.img" "$d/fs/var.img" "$d/fs/home.img"
        mkfs.btrfs -q -f -L rootfs -U $fs_root --rootdir "$d/fs/rootdir" "$d/fs/rootfs.img"
        mkfs.btrfs -q -f -L var -U $fs_var "$d/fs/var.img"
        mkfs.btrfs -q -f -L home -U $fs_home "$d/fs/home.img"
        if [ "$layout" = steamos ]; then
            parts=("esp rootfs-A rootfs-B var-A var-B home")
            serials=(steamos)
        elif [ "$layout" = steamos-stale ]; then
            parts=("esp rootfs-A rootfs-B var-A var-B home")
            serials=(steamos stale0 stale1)
            truncate -s 64M "$d/disk1.img" "$d/disk2.img"
            truncate -s 128M "$d/fs/stale1.img"
            mkfs.btrfs -q -f -L stale1 -U 5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a0e "$d/fs/stale1.img"
            dd if="$d/fs/rootfs.img" of="$d/disk1.img" bs=4096 skip=16 seek=16 count=1 conv=notrunc status=none
            dd if="$d/fs/stale1.img" of="$d/disk2.img" bs=4096 skip=16 seek=16 count=1 conv=notrunc status=none
            _qemu_sb_edit "$d/disk1.img" 65536 gen_add=5
            sgdisk -U 5c1a6e2f-0d3b-4c1e-9a7f-00000000d151 -n 1:2048:0 -c 1:data -t 1:8300 \
                -u 1:5c1a6e2f-0d3b-4c1e-9a7f-000000000011 "$d/disk1.img"
            sgdisk -U 5c1a6e2f-0d3b-4c1e-9a7f-00000000d152 -n 1:2048:0 -c 1:data2 -t 1:8300 \
                -u 1:5c1a6e2f-0d3b-4c1e-9a7f-000000000021 "$d/disk2.img"
        elif [ "$layout" = steamos-usb ]; then
            parts=("esp rootfs-A rootfs-B var-A var-B home" "rootfs-A")
            serials=(steamos usb0)
            usb_disk=1
            cp --sparse=always "$d/fs/rootfs.img" "$d/fs/rootfs-usb.img"
            _qemu_sb_edit "$d/fs/rootfs-usb.img" 65536 gen_add=5
            # usb-storage, sd_mod and the USB host driver; CRC providers the t10-pi chain asks for
            echo "crct10dif_generic crc64_rocksoft_generic xhci-pci usb-storage sd_mod" >"$d/modules.extra"
        elif [ "$layout" = steamos-usbcraft ]; then
            parts=("esp rootfs-A rootfs-B var-A var-B home" "stick1 stick2")
            serials=(steamos usb0)
            usb_disk=1
            local devuuid
            devuuid=$(btrfs inspect-internal dump-super "$d/fs/rootfs.img" | awk '$1 == "dev_item.uuid" { print $2 }')
            truncate -s 128M "$d/fs/stick1.img" "$d/fs/stick2.img"
            mkfs.btrfs -q -f -L stick1 "$d/fs/stick1.img"
            mkfs.btrfs -q -f -L stick2 "$d/fs/stick2.img"
            python3 "$QEMU_REPO/tests/host/craft-super.py" "$d/fs/stick1.img" --metadata-uuid $fs_root \
                --dev-fsid $fs_root --dev-uuid "$devuuid" --flags-or 1000000000 --generation 999999
            python3 "$QEMU_REPO/tests/host/craft-super.py" "$d/fs/stick2.img" --metadata-uuid $fs_root \
                --dev-fsid $fs_root --dev-uuid "$devuuid" --flags-or 1000000000 --generation 999999 \
                --devid 2 --num-devices 2
            btrfs inspect-internal dump-super "$d/fs/stick1.img"
            btrfs inspect-internal dump-super "$d/fs/stick2.img" | grep -E 'csum|devid|num_devices'
            echo "crct10dif_generic crc64_rocksoft_generic xhci-pci usb-storage sd_mod" >"$d/modules.extra"
        elif [ "$layout" = steamos-verity ]; then
            parts=("esp rootfs-A rootfs-B var-A var-B home")
            serials=(steamos verity data)
            # disk 2 (serial data): a unique btrfs on the whole disk, no partition table (the guest
            # opens a dm-linear over it)
            truncate -s 128M "$d/disk2.img"
            mkfs.btrfs -q -f -L data -U 5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a0d "$d/disk2.img"
            local vout
            truncate -s 8M "$d/disk1.img"
            vout=$(veritysetup format --no-superblock --hash=sha256 --data-block-size=4096 \
                --hash-block-size=4096 "$d/fs/rootfs.img" "$d/disk1.img") || return 1
            echo "$vout"
            printf 'bsg-verity %s %s %s\n' "$(echo "$vout" | awk -F':[ \t]*' '/^Root hash/ { print $2 }')" \
                "$(echo "$vout" | awk -F':[ \t]*' '/^Salt/ { print $2 }')" \
                "$(echo "$vout" | awk -F':[ \t]*' '/^Data blocks/ { print $2 }')" |
                dd of="$d/disk1.img" bs=1M seek=4 conv=notrunc status=none
        elif [ "$layout" = raid-2disk ] || [ "$layout" = raid-2disk-stall ]; then
            parts=("esp root1" "root2")
            serials=(raid-a raid-b)
            if [ "$layout" = raid-2disk-stall ]; then
                # raid-2disk plus a USB stick (disk2, serial usb-stall, as steamos-usb) whose reads
                # stall: QEMU throttles its drive to 512 bytes/s (a 4 KiB read takes 8 s). It holds a
                # whole-disk btrfs of its own (fsid 5c1a6e2f-...-b7f5c0de0a12, label stall): it
                # collides with nothing.
                truncate -s 128M "$d/disk2.img"
                mkfs.btrfs -q -f -L stall -U 5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a12 "$d/disk2.img"
                serials+=(usb-stall)
                usb_disk=2
                usb_drive_opts=,throttling.bps-total=512
                echo "crct10dif_generic crc64_rocksoft_generic xhci-pci usb-storage sd_mod" >"$d/modules.extra"
            fi
            truncate -s 128M "$d/fs/root1.img" "$d/fs/root2.img"
            mkfs.btrfs -q -f -L raidroot -d raid1 -m raid1 -U 5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a05 \
                "$d/fs/root1.img" "$d/fs/root2.img"
        elif [ "$layout" = steamos-2disk ]; then
            parts=("esp rootfs-A rootfs-B var-A var-B home" "rootfs-A rootfs-B")
            serials=(steamos steamos-copy)
        else
            parts=("esp rootfs-A var-A home" "rootfs-B var-B")
            serials=(steamos-a steamos-b)
        fi
        for i in "${!parts[@]}"; do
            img=$d/disk$i.img
            truncate -s 700M "$img"
            n=1 start=2048
            local -a sg=(-U "5c1a6e2f-0d3b-4c1e-9a7f-00000000d15$i")
            for label in ${parts[$i]}; do
                p=$d/fs/${label%-[AB]}.img
                [ "$i" = "${usb_disk:-}" ] && [ -e "$d/fs/rootfs-usb.img" ] && p=$d/fs/rootfs-usb.img
                # fixed partition GUIDs ...-<disk><partition number>; one sgdisk call (each costs 1 s)
                sg+=(-n "$n:$start:+$(( $(stat -c %s "$p") / 1024 ))K" -c "$n:$label"
                    -t "$n:$([ "$label" = esp ] && echo ef00 || echo 8300)"
                    -u "$n:5c1a6e2f-0d3b-4c1e-9a7f-0000000000$i$n")
                dd if="$p" of="$img" bs=1M seek=$((start / 2048)) conv=notrunc,sparse status=none
                start=$((start + $(stat -c %s "$p") / 512))
                n=$((n + 1))
            done
            sgdisk "${sg[@]}" "$img"
            sgdisk -p "$img"
        done
        rm -rf "$d/fs"
        ;;
    basic-sata)
        # systemd's TEST-64-UDEV-STORAGE btrfs_basic, re-expressed: disk0 (virtio, serial bootdisk) a
        # GPT with one partition `bootroot` (PARTUUID 5c1a6e2f-...-0000000b0001) holding a btrfs of
        # its own (fsid 5c1a6e2f-...-b7f5c0de0a10, label bootroot), the disk the boot names; disks 1-4
        # blank 384 MiB SATA disks on one AHCI controller (serials btrfsbasic0..3), for the guest's
        # own mkfs.btrfs and sgdisk, as systemd's test has them (ata-*_btrfsbasicN in by-id).
        truncate -s 160M "$d/disk0.img"
        truncate -s 128M "$d/boot-root.img"
        mkfs.btrfs -q -f -L bootroot -U 5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a10 "$d/boot-root.img"
        sgdisk -o -U 5c1a6e2f-0d3b-4c1e-9a7f-0000000b0000 -n 1:2048:+128M -c 1:bootroot -t 1:8300 \
            -u 1:5c1a6e2f-0d3b-4c1e-9a7f-0000000b0001 "$d/disk0.img"
        dd if="$d/boot-root.img" of="$d/disk0.img" bs=1M seek=1 conv=notrunc,sparse status=none
        rm -f "$d/boot-root.img"
        truncate -s 384M "$d"/disk{1,2,3,4}.img
        serials=(bootdisk btrfsbasic0 btrfsbasic1 btrfsbasic2 btrfsbasic3)
        sata_from=1
        echo "crct10dif_generic crc64_rocksoft_generic ahci sd_mod" >"$d/modules.extra"
        ;;
    usb-before-disk)
        # A USB stick that carries a copy of an internal disk, present at power-on while the internal
        # disk appears later: disk0 (virtio, serial internal0) a GPT (disk GUID
        # 5c1a6e2f-...-0000000c0000) with one partition `sysroot` (PARTUUID 5c1a6e2f-...-0000000c0001)
        # holding a btrfs (fsid 5c1a6e2f-...-b7f5c0de0a11, label sysroot); disk1 a USB mass-storage
        # stick (as steamos-usb, serial usb0) whose bytes are a copy of disk0: same GUIDs, same
        # filesystem, same names.
        truncate -s 160M "$d/disk0.img"
        truncate -s 128M "$d/sysroot.img"
        mkdir -p "$d/sysroot-dir/etc"
        echo "internal sysroot" >"$d/sysroot-dir/etc/os-release"
        mkfs.btrfs -q -f -L sysroot -U 5c1a6e2f-0d3b-4c1e-9a7f-b7f5c0de0a11 --rootdir "$d/sysroot-dir" \
            "$d/sysroot.img"
        sgdisk -o -U 5c1a6e2f-0d3b-4c1e-9a7f-0000000c0000 -n 1:2048:+128M -c 1:sysroot -t 1:8300 \
            -u 1:5c1a6e2f-0d3b-4c1e-9a7f-0000000c0001 "$d/disk0.img"
        dd if="$d/sysroot.img" of="$d/disk0.img" bs=1M seek=1 conv=notrunc,sparse status=none
        rm -rf "$d/sysroot.img" "$d/sysroot-dir"
        cp --sparse=always "$d/disk0.img" "$d/disk1.img"
        serials=(internal0 usb0)
        usb_disk=1
        echo "crct10dif_generic crc64_rocksoft_generic xhci-pci usb-storage sd_mod" >"$d/modules.extra"
        ;;
    none) serials=() ;;
    *) qemu_log "unknown disk layout '$layout'"; return 1 ;;
    esac
    : >"$d/disks.args"
    local nvirtio=0
    for i in "${!serials[@]}"; do
        if [ "$i" = "${usb_disk:-}" ]; then
            # usb_drive_opts: more -drive options of the stick (block throttling for a stalling stick)
            printf -- '-device\nqemu-xhci,id=xhci\n-drive\nfile=%s,format=raw,if=none,id=d%d%s\n-device\nusb-storage,bus=xhci.0,drive=d%d,removable=off,serial=%s\n' \
                "$d/disk$i.img" "$i" "${usb_drive_opts:-}" "$i" "${serials[$i]}" >>"$d/disks.args"
            continue
        fi
        # disks from index sata_from on: SATA disks on one AHCI controller (ports ahci.0 ... ahci.5)
        if [ -n "${sata_from:-}" ] && [ "$i" -ge "$sata_from" ]; then
            [ "$i" = "$sata_from" ] && printf -- '-device\nahci,id=ahci\n' >>"$d/disks.args"
            printf -- '-drive\nfile=%s,format=raw,if=none,id=d%d\n-device\nide-hd,drive=d%d,bus=ahci.%d,serial=%s\n' \
                "$d/disk$i.img" "$i" "$i" $((i - sata_from)) "${serials[$i]}" >>"$d/disks.args"
            continue
        fi
        printf -- '-drive\nfile=%s,format=raw,if=none,id=d%d%s\n-device\nvirtio-blk-pci,drive=d%d,serial=%s\n' \
            "$d/disk$i.img" "$i" "${drive_opts[$i]:-}" "$i" "${serials[$i]}" >>"$d/disks.args"
        nvirtio=$((nvirtio + 1))
    done
    echo "$nvirtio" >"$d/disks.count"
}

_qemu_copy_bin() { # ROOT BINARY [DEST]: binary plus its shared libraries and the loader
    local r=$1 b=$2 dst=${3:-/bin/$(basename "$2")} l
    mkdir -p "$r$(dirname "$dst")"
    rm -f "$r$dst"      # may be a busybox applet link: do not write through it
    cp -L "$b" "$r$dst"
    for l in $(ldd "$b" 2>/dev/null | grep -o '/[^ ]*'); do
        [ -e "$r$l" ] && continue
        mkdir -p "$r$(dirname "$l")"
        cp -L "$l" "$r$l"
    done
}

qemu_initramfs() {
    local case=$1 out=$2 ko=$3 modparams=${4:-} r m b f ndisks
    ndisks=$(cat "${QEMU_DISKDIR:-/nonexistent}/disks.count" 2>/dev/null || echo 0)
    local QEMU_EXTRA_MODULES=${QEMU_EXTRA_MODULES:-$(cat "${QEMU_DISKDIR:-/nonexistent}/modules.extra" 2>/dev/null)}
    r=$(mktemp -d "${TMPDIR:-/var/tmp}/initramfs.XXXXXX")
    mkdir -p "$r"/{bin,sbin,lib,lib64,proc,sys,dev,tmp,run,mnt,modules,etc}
    cp "$(command -v busybox)" "$r/bin/busybox"
    for m in $("$r/bin/busybox" --list); do [ -e "$r/bin/$m" ] || ln -s busybox "$r/bin/$m"; done
    for b in btrfs mkfs.btrfs btrfstune blkid sha256sum stat; do
        _qemu_copy_bin "$r" "$(command -v "$b")"
    done
    for b in ${QEMU_EXTRA_BINS:-}; do _qemu_copy_bin "$r" "$b"; done
    for f in ${QEMU_EXTRA_FILES:-}; do
        mkdir -p "$r$(dirname "${f#*:}")"
        cp -a "${f%%:*}" "$r${f#*:}"
    done
    : >"$r/modules/order"
    for m in $(qemu_module_order); do
        b=$(basename "$m")
        b=${b%%.ko*}
        if [ "$b" = btrfs ]; then
            src=$ko
        else
            src=$QK_ROOT/lib/modules/$QK_KVER/$m
        fi
        case $src in
        *.xz) xz -dc "$src" >"$r/modules/$b.ko" ;;
        *.zst) zstd -qdc "$src" >"$r/modules/$b.ko" ;;
        *) cp "$src" "$r/modules/$b.ko" ;;
        esac
        echo "$b" >>"$r/modules/order"
    done
    # modules of the image a case asks for in its header (kmods='overlay'), loaded after btrfs
    : >"$r/modules/extra"
    for b in $(sed -n "s/^# qemu-case:.*kmods='\([^']*\)'.*/\1/p" "$case" | head -n 1); do
        src=$(find "$QK_ROOT/lib/modules/$QK_KVER" -name "$b.ko*" | head -n 1)
        [ -n "$src" ] || { qemu_log "no module $b in the image"; rm -rf "$r"; return 1; }
        case $src in
        *.xz) xz -dc "$src" >"$r/modules/$b.ko" ;;
        *.zst) zstd -qdc "$src" >"$r/modules/$b.ko" ;;
        *) cp "$src" "$r/modules/$b.ko" ;;
        esac
        echo "$b" >>"$r/modules/extra"
    done
    cp "$QEMU_HERE/guest-lib.sh" "$r/lib/guest-lib.sh"
    cp "$case" "$r/case.sh"
    cat >"$r/init" <<EOF
#!/bin/sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp; mount -t tmpfs run /run
for m in \$(cat /modules/order); do
    if [ "\$m" = btrfs ]; then insmod /modules/btrfs.ko $modparams; else insmod /modules/\$m.ko; fi ||
        echo "guest: insmod \$m failed"
done
for m in \$(cat /modules/extra); do insmod /modules/\$m.ko || echo "guest: insmod \$m failed"; done
n=0
while [ \$(ls /sys/block | grep -c '^vd') -lt $ndisks ] && [ \$n -lt 200 ]; do sleep 0.1; n=\$((n + 1)); done
echo "CASE-START"
sh /case.sh
echo "CASE-EXIT: \$?"
sync
poweroff -f
EOF
    chmod +x "$r/init" "$r/case.sh"
    (cd "$r" && find . | "$r/bin/busybox" cpio -o -H newc 2>"${TMPDIR:-/var/tmp}/cpio.log" | gzip -1) >"$out"
    rm -rf "$r"
}

# no_timer_check: on a loaded host the guest's IO-APIC timer check under TCG can fail and panic
# at boot ("IO-APIC + timer doesn't work!", measured during a full ctest -L qemu -j2 run)
qemu_boot() {
    local initrd=$1 log=$2 d=$3 t=${QEMU_TIMEOUT:-300}
    shift 3
    local -a disks=()
    [ -e "$d/disks.args" ] && mapfile -t disks <"$d/disks.args"
    timeout --foreground -k 5 "$t" qemu-system-x86_64 -cpu max -smp 2 -m 1024 -nographic -no-reboot \
        -nic none -kernel "$QK_KERNEL" -initrd "$initrd" \
        -append "console=ttyS0 quiet panic=-1 oops=panic no_timer_check ${QEMU_APPEND:-}" \
        "${disks[@]}" "$@" >"$log" 2>&1 </dev/null
}

qemu_verdict() {
    local log=$1 rc
    rc=$(grep -ao 'CASE-EXIT: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')
    if [ -n "$rc" ]; then
        echo "$rc"
    elif grep -aq 'Kernel panic' "$log"; then
        echo 125
    else
        echo 124
    fi
}

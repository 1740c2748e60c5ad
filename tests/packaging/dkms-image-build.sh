#!/bin/bash
# dkms-image-build.sh DEBDIR_FILE WORK: btrfs-scan-gate-dkms installed in an image build, a chroot of
# a throw-away Debian 12 root (throwaway-root.sh) with the real linux-headers of the harness's 6.1
# ABI ($BSG_CACHE/kernel-6.1.env; sign-file comes with them) and a stand-in kernel of that ABI. In a
# chroot dkms cannot judge the target's Secure Boot (this machine's EFI is not the device's):
#  - no key named: the postinst's dkms build is skipped, and its line for the kernel says so: an
#    image build, the build skipped, no key made, how to name one; no module is built or installed,
#    and no private key is anywhere in the root (dkms makes
#    /var/lib/dkms/mok.key at its first build otherwise: checked at the end by taking the package's
#    framework.conf.d drop-in away, which must make dkms create it, so this test can fail);
#  - a key named in /etc/btrfs-scan-gate/module-signing.conf (the key itself bind-mounted from
#    outside, as an image builder keeps it): `dkms install` builds the module, signed by that key
#    (modinfo signer), and once the builder takes the key and the file away no private key is left.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
cache=${BSG_CACHE:-/var/cache/btrfs-scan-gate}
debfile=$1 work=$2
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mount namespace)"
for t in openssl modinfo unshare; do command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh)"; done
[ -e /etc/apt/sources.list.d/debian.sources ] || skip "no /etc/apt/sources.list.d/debian.sources to give the root the archive"
if [ -z "${BSG_IMAGE_BUILD_NS:-}" ]; then
    exec unshare -m env BSG_IMAGE_BUILD_NS=1 "$0" "$@"
fi
env=$cache/kernel-6.1.env
[ -e "$env" ] || fail "no $env (scripts/setup.sh runs tests/qemu/setup.sh, which writes it)"
# shellcheck disable=SC1090 # written by tests/qemu/setup.sh: SRCVER, ABI
. "$env"
: "${SRCVER:?}" "${ABI:?}"
deb=$(ls "$(cat "$debfile")"/btrfs-scan-gate-dkms_*_all.deb) || fail "no btrfs-scan-gate-dkms .deb"
shipped=$(dpkg-deb -c "$deb" | sed -n 's|.*/linux-btrfs-\(.*\)\.tar\.xz$|\1|p')
[ "$shipped" = "$SRCVER" ] || skip "the package ships fs/btrfs of $shipped, the harness's ABI $ABI is $SRCVER"
stock=$(find "$cache/image-$SRCVER/root/lib/modules/$ABI" -name 'btrfs.ko*' | head -n 1)
[ -n "$stock" ] || fail "no stock btrfs.ko of $ABI under $cache/image-$SRCVER"
rm -rf "$work"
root=$work/root logs=$work/logs
mkdir -p "$logs" "$work/keys"
trap '"$here/throwaway-root.sh" remove "$root"' EXIT
"$here/throwaway-root.sh" unpack "$root" --archive || fail "no throw-away root"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"; }
private_keys() { # files in the root holding a private key (the mounts aside)
    find "$root" -xdev \( -path "$root/proc" -o -path "$root/dev" -o -path "$root/run" -o -path "$root/usr/share" \
        -o -path "$root/usr/lib" -o -path "$root/usr/src" \) -prune -o -type f -size -64k -print0 |
        xargs -0 grep -l -- '-----BEGIN .*PRIVATE KEY-----' 2>/dev/null | sed "s|^$root||" || true
}

in_root apt-get install -y --no-install-recommends openssl "linux-headers-$ABI=$SRCVER" >"$logs/apt-headers.log" 2>&1 ||
    { tail -n 30 "$logs/apt-headers.log"; fail "apt-get install linux-headers-$ABI=$SRCVER in the root"; }

sign_file=$(cd "$root" && ls usr/lib/linux-kbuild-*/scripts/sign-file | head -n 1)
[ -x "$root/$sign_file" ] || fail "no sign-file in the root: dkms would not sign anything (the test would prove nothing)"
in_root openssl version >/dev/null || fail "no openssl in the root: dkms could not make a key (the test would prove nothing)"
mkdir -p "$root/lib/modules/$ABI/kernel/fs/btrfs"
cp "$stock" "$root/lib/modules/$ABI/kernel/fs/btrfs/"
touch "$root/boot/vmlinuz-$ABI"
[ -z "$(private_keys)" ] || { private_keys; fail "the root holds a private key before the package"; }

# 1. no key named
cp "$deb" "$root/tmp/"
in_root dpkg -i "/tmp/${deb##*/}" >"$logs/dpkg-install.log" 2>&1 || { tail -n 40 "$logs/dpkg-install.log"; fail "dpkg -i btrfs-scan-gate-dkms in the chroot"; }
# the postinst's line for the kernel says that it is an image build (a chroot; or, where this
# machine does not let root look at PID 1's root, that it cannot tell: the same answer), that the
# build was skipped, and how to lift it (dkms-secureboot.sh checks each way of telling apart)
said=$(grep "^  $ABI: " "$logs/dpkg-install.log" || true)
for want in "in-tree btrfs module, unpatched: an image build (" \
        "): the module build is skipped and no signing key is made" \
        "/etc/btrfs-scan-gate/module-signing.conf" "key=none for a target without Secure Boot" \
        "then dpkg-reconfigure btrfs-scan-gate-dkms"; do
    case $said in *"$want"*) ;; *)
        tail -n 30 "$logs/dpkg-install.log"
        fail "no key named: the postinst's line for $ABI lacks '$want' (the image build's skip, said plainly)" ;;
    esac
done
[ ! -e "$root/lib/modules/$ABI/updates/dkms/btrfs.ko" ] || fail "no key named: a module was installed"
built=$(find "$root/var/lib/dkms" "$root/lib/modules" -name 'btrfs.ko*' ! -path "*/kernel/fs/btrfs/*" 2>/dev/null || true)
[ -z "$built" ] || fail "no key named: a module was built: ${built//$root/}"
keys=$(private_keys)
[ -z "$keys" ] || fail "no key named: private key(s) in the image: $keys"
[ ! -e "$root/var/lib/dkms/mok.key" ] || fail "no key named: dkms made /var/lib/dkms/mok.key"
echo "ok: no key named: the postinst says: ${said#  }"
echo "ok: no key named: nothing built, no private key in the root"

# 2. a key named (kept outside the root, bind-mounted while the image is built)
openssl req -new -x509 -nodes -days 1 -subj "/CN=btrfs-scan-gate image test key" -newkey rsa:2048 \
    -keyout "$work/keys/signing.key" -outform DER -out "$work/keys/signing.der" >"$logs/openssl.log" 2>&1 ||
    { cat "$logs/openssl.log"; fail "openssl req"; }
mkdir -p "$root/run/signing" "$root/etc/btrfs-scan-gate"
mount --bind "$work/keys" "$root/run/signing"
printf 'key=/run/signing/signing.key\ncert=/run/signing/signing.der\n' >"$root/etc/btrfs-scan-gate/module-signing.conf"
ver=$(dpkg-deb -f "$deb" Version)
ver=${ver%%-*}
start=$(date +%s)
in_root dkms install -m btrfs-scan-gate -v "$ver" -k "$ABI" >"$logs/dkms-install.log" 2>&1 ||
    { tail -n 40 "$logs/dkms-install.log"; fail "key named: dkms install"; }
echo "key named: dkms install in $(( $(date +%s) - start )) s"
ko=$(ls "$root/lib/modules/$ABI/updates/dkms/"btrfs.ko* 2>/dev/null | head -n 1)
[ -n "$ko" ] || fail "key named: no module installed under updates/dkms"
signer=$(modinfo -F signer "$ko")
[ "$signer" = "btrfs-scan-gate image test key" ] || fail "key named: the module's signer is '$signer'"
modinfo -F parm "$ko" | grep -q '^skip_scan:' || fail "key named: the module has no skip_scan"
umount "$root/run/signing"
rm -f "$root/etc/btrfs-scan-gate/module-signing.conf"
keys=$(private_keys)
[ -z "$keys" ] || fail "key named: private key(s) left in the image: $keys"
[ ! -e "$root/var/lib/dkms/mok.key" ] || fail "key named: dkms made /var/lib/dkms/mok.key"
echo "ok: key named: ${ko#"$root"} signed by '$signer', no private key left in the root"

# 3. the check can fail: without the package's framework.conf.d drop-in, dkms makes its own key at
# the first build it tries (even one dkms.conf then skips)
in_root dkms uninstall -m btrfs-scan-gate -v "$ver" -k "$ABI" >"$logs/dkms-uninstall.log" 2>&1 || true
in_root dkms unbuild -m btrfs-scan-gate -v "$ver" -k "$ABI" >>"$logs/dkms-uninstall.log" 2>&1 ||
    in_root dkms remove -m btrfs-scan-gate -v "$ver" -k "$ABI" >>"$logs/dkms-uninstall.log" 2>&1 || true
rm "$root/etc/dkms/framework.conf.d/btrfs-scan-gate.conf"
rc=0
in_root dkms build -m btrfs-scan-gate -v "$ver" -k "$ABI" >"$logs/dkms-build-nodropin.log" 2>&1 || rc=$?
[ -e "$root/var/lib/dkms/mok.key" ] ||
    { tail -n 20 "$logs/dkms-build-nodropin.log"; fail "without the drop-in dkms made no key either: this test proves nothing"; }
echo "ok: control: without the drop-in dkms made /var/lib/dkms/mok.key (dkms build exit $rc)"
echo "PASS: image build (chroot): no key named: skipped, no private key in the image; a named key: the module signed with it, no key left"

#!/bin/bash
# dkms-secureboot.sh: dkms.conf of btrfs-scan-gate-dkms, sourced as dkms sources it, builds a 6.1
# kernel's module only where it will load and only with a key somebody named:
#  - running system, no EFI or Secure Boot off, no key named: built (unsigned, as before);
#  - Secure Boot on, or EFI whose SecureBoot variable cannot be read: skipped with a message,
#    unless /etc/btrfs-scan-gate/module-signing.conf names a readable key and certificate;
#    key=none does not lift it;
#  - an image build (/ is not PID 1's root: a chroot; or DPKG_ROOT set): skipped unless a key is
#    named, or key=none (the builder says the target has no Secure Boot), whatever the build
#    machine's EFI says;
#  - the kernel's version (its headers' package.h) has no fs/btrfs here: skipped, naming source.sh keep;
#  - a 5.10 or 6.12 kernel: never built;
# and the framework.conf.d drop-in gives dkms the named key for this module only, or a sign-file
# that does not exist (so dkms neither signs nor makes a key of its own), and nothing for other
# modules. dkms.conf runs no program when sourced (PATH is empty here).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dkms_dir=$here/../../packaging/dkms
work=$(mktemp -d "${TMPDIR:-/var/tmp}/dkms-secureboot.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$work/src" "$work/efi/efivars" "$work/hdr/include/generated" "$work/cache" "$work/elsewhere" "$work/keys"
cp "$dkms_dir/dkms.conf" "$work/src/"
echo x >"$work/src/linux-btrfs-6.1.192-3.tar.xz"
echo '#define LINUX_PACKAGE_ID " Debian 6.1.192-3"' >"$work/hdr/include/generated/package.h"
echo key >"$work/keys/k.priv"
echo cert >"$work/keys/k.der"
var=$work/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
bash_bin=$(command -v bash)

# one NAME WHERE(running|chroot|dpkgroot) EFI(none|off|on|novar) KEY(absent|named|none|unreadable)
#     EXPECT(build|skip) [MESSAGE]
one() {
    local name=$1 where=$2 efi=$3 key=$4 want=$5 msg=${6:-} pid1=/ efidir=$work/efi dpkgroot=
    rm -f "$var" "$work/signing.conf"
    case $efi in
    none) efidir=$work/no-efi ;;
    off) printf '\007\000\000\000\000' >"$var" ;;
    on) printf '\007\000\000\000\001' >"$var" ;;
    novar) ;;
    esac
    case $key in
    named) printf 'key=%s\ncert=%s\n' "$work/keys/k.priv" "$work/keys/k.der" >"$work/signing.conf" ;;
    none) echo key=none >"$work/signing.conf" ;;
    unreadable) printf 'key=%s\ncert=%s\n' "$work/keys/missing.priv" "$work/keys/k.der" >"$work/signing.conf" ;;
    esac
    case $where in chroot) pid1=$work/elsewhere ;; noproc) pid1=$work/no-proc/1/root ;; dpkgroot) dpkgroot=/srv/image ;; esac
    local got
    got=$(cd / && env -i PATH= BSG_EFI_DIR="$efidir" BSG_PID1_ROOT="$pid1" BSG_SIGNING_CONF="$work/signing.conf" \
        BSG_DKMS_SOURCE_CACHE="$work/cache" DPKG_ROOT="$dpkgroot" kernelver=${KVER:-6.1.0-57-amd64} \
        kernel_source_dir="$work/hdr" "$bash_bin" -c \
        '. "$1" >/dev/null; [[ $kernelver =~ $BUILD_EXCLUSIVE_KERNEL ]] && echo build || echo skip' \
        sh "$work/src/dkms.conf" 2>"$work/$name.err")
    [ "$got" = "$want" ] || { cat "$work/$name.err"; fail "$name: $got, expected $want"; }
    if grep -q 'command not found' "$work/$name.err"; then cat "$work/$name.err"; fail "$name: dkms.conf ran a program"; fi
    if [ -n "$msg" ]; then
        grep -q -- "$msg" "$work/$name.err" || { cat "$work/$name.err"; fail "$name: message lacks '$msg'"; }
    elif [ -s "$work/$name.err" ]; then
        cat "$work/$name.err"; fail "$name: unexpected message"
    fi
    echo "ok: $name: $got $(head -c 150 "$work/$name.err")"
}
one no-efi running none absent build
one sb-off running off absent build
one sb-on running on absent skip "Secure Boot is on and no signing key is named"
one sb-novar running novar absent skip "Secure Boot is undecidable"
one sb-on-named running on named build
one sb-on-key-none running on none skip "says key=none"
one sb-on-unreadable running on unreadable skip "one is not readable"
one sb-off-key-none running off none build
one chroot-no-efi chroot none absent skip "an image build (/ is not the root of PID 1 (a chroot)): the module build is skipped and no signing key is made"
one chroot-sb-off chroot off absent skip "an image build"
one chroot-named chroot on named build
one chroot-key-none chroot on none build
one dpkgroot dpkgroot none absent skip "an image build (DPKG_ROOT is set)"
one no-proc noproc none absent skip "an image build (PID 1's root cannot be compared with /"
# the source: another version's headers, then the same version kept in the cache
echo '#define LINUX_PACKAGE_ID " Debian 6.1.190-1"' >"$work/hdr/include/generated/package.h"
one other-version running none absent skip "another linux-source-6.1 version than 6.1.190-1; keep that one with"
echo x >"$work/cache/linux-btrfs-6.1.190-1.tar.xz"
one other-version-kept running none absent build
rm "$work/hdr/include/generated/package.h"
one no-package-h running none absent skip "do not say the kernel's Debian version"
# other kernel series: never built, and quietly (no message)
KVER=6.12.57+deb13-amd64 one trixie-kernel running on absent skip
KVER=5.10.0-30-amd64 one old-kernel running none absent skip

# the framework.conf.d drop-in, as dkms's safe_source reads it (with $module set)
drop() { # MODULE: the signing variables the drop-in sets
    env -i PATH=/usr/bin:/bin module="$1" bash -c \
        'conf=$2; . /dev/stdin <<<"$(sed "s|/etc/btrfs-scan-gate/module-signing.conf|$conf|g" "$3")"
         echo "sign_file=${sign_file-unset} key=${mok_signing_key-unset} cert=${mok_certificate-unset}"' \
        sh "$1" "$work/signing.conf" "$dkms_dir/framework-signing.conf"
}
rm -f "$work/signing.conf"
got=$(drop btrfs-scan-gate)
case $got in "sign_file=/nonexistent/"*" key=/nonexistent/"*) ;; *) fail "drop-in, no key named: $got" ;; esac
printf 'key=%s\ncert=%s\n' "$work/keys/k.priv" "$work/keys/k.der" >"$work/signing.conf"
got=$(drop btrfs-scan-gate)
[ "$got" = "sign_file=unset key=$work/keys/k.priv cert=$work/keys/k.der" ] || fail "drop-in, key named: $got"
echo key=none >"$work/signing.conf"
got=$(drop btrfs-scan-gate)
case $got in "sign_file=/nonexistent/"*) ;; *) fail "drop-in, key=none: $got" ;; esac
got=$(drop some-other-module)
[ "$got" = "sign_file=unset key=unset cert=unset" ] || fail "drop-in touches another module: $got"
echo "ok: framework.conf.d drop-in: the named key for btrfs-scan-gate, no sign-file without one, nothing for other modules"
echo "PASS: 6.1 modules built only where they load, signed only with a named key; image builds never judged by the build machine; other series never built"

#!/bin/bash
# dkms-secureboot.sh: with Secure Boot on and dkms's signing key not enrolled (or not checkable),
# the dkms package leaves the in-tree btrfs module in charge: dkms.conf, sourced as dkms sources it,
# then matches no kernel (dkms skips the build with its "Skipped" status 77, no error for apt), and
# a message says why and what to do. Secure Boot off, no EFI, or the key enrolled: 6.1 kernels build
# as before. The EFI variable is a file in a fake efivars directory, mokutil a stub on PATH, the
# dkms framework.conf a file of the test: nothing of the host is read.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dkms_dir=$here/../../packaging/dkms
work=$(mktemp -d "${TMPDIR:-/var/tmp}/dkms-secureboot.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# dkms.conf and secureboot.sh side by side, as in /usr/src/btrfs-scan-gate-<ver>/
mkdir -p "$work/src" "$work/bin" "$work/efivars" "$work/dkms"
cp "$dkms_dir/dkms.conf" "$dkms_dir/secureboot.sh" "$work/src/"
# source.sh (is the kernel's source to be had?) has its own test (dkms-version-mismatch): here it
# always says yes, so that only Secure Boot decides
printf '#!/bin/sh\nexit 0\n' >"$work/src/source.sh"
printf 'mok_certificate=%s\n' "$work/dkms/mok.pub" >"$work/framework.conf"
var=$work/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c
cat >"$work/bin/mokutil" <<'STUB'
#!/bin/sh
# mokutil stub: --test-key CERT answers as $MOK_ENROLLED says
[ "$1" = --test-key ] || exit 2
if [ "$MOK_ENROLLED" = yes ]; then echo "$2 is already enrolled"; exit 1; fi
echo "$2 is not enrolled"
exit 0
STUB
chmod +x "$work/bin/mokutil"
# the tools the scripts use, and nothing else (a host mokutil must not answer for the stub)
mkdir -p "$work/tools"
for t in bash od tr sed tail cat; do ln -s "$(command -v "$t")" "$work/tools/$t"; done

# one NAME SB(none|0|1) CERT(yes|no) MOKUTIL(enrolled|not|absent) EXPECT(build|skip) [MESSAGE]
one() {
    local name=$1 sb=$2 cert=$3 mok=$4 want=$5 msg=${6:-} path=$work/bin:$work/tools
    rm -f "$var" "$work/dkms/mok.pub"
    case $sb in 0|1) printf '\007\000\000\000\00'"$sb" >"$var" ;; esac
    [ "$cert" = no ] || echo cert >"$work/dkms/mok.pub"
    [ "$mok" != absent ] || path=$work/tools
    # as dkms's read_conf: sourced by bash, $kernelver set, stdout discarded
    local got
    got=$(cd / && env -i PATH="$path" BSG_EFIVARS_DIR="$work/efivars" BSG_DKMS_FRAMEWORK_CONF="$work/framework.conf" \
        MOK_ENROLLED="$([ "$mok" = enrolled ] && echo yes || echo no)" kernelver=6.1.0-57-amd64 \
        bash -c '. "$1" >/dev/null; [[ $kernelver =~ $BUILD_EXCLUSIVE_KERNEL ]] && echo build || echo skip' \
        sh "$work/src/dkms.conf" 2>"$work/$name.err")
    [ "$got" = "$want" ] || { cat "$work/$name.err"; fail "$name: $got, expected $want"; }
    if [ -n "$msg" ]; then
        grep -q -- "$msg" "$work/$name.err" || { cat "$work/$name.err"; fail "$name: message lacks '$msg'"; }
    elif [ -s "$work/$name.err" ]; then
        cat "$work/$name.err"; fail "$name: unexpected message"
    fi
    echo "ok: $name: $got $(head -c 160 "$work/$name.err")"
}
one no-efi none yes enrolled build
one secure-boot-off 0 yes not build
one on-key-enrolled 1 yes enrolled build
one on-key-not-enrolled 1 yes not skip "is not enrolled: the patched btrfs module is not built; the signed in-tree btrfs module stays in charge"
one on-no-certificate 1 no enrolled skip "does not exist yet"
one on-no-mokutil 1 yes absent skip "mokutil is not installed"
# a 5.10 kernel is not built whatever the state (the 6.1 guard still holds)
got=$(env -i PATH=/usr/bin:/bin BSG_EFIVARS_DIR="$work/none" kernelver=5.10.0-30-amd64 \
    bash -c '. "$1" >/dev/null; [[ $kernelver =~ $BUILD_EXCLUSIVE_KERNEL ]] && echo build || echo skip' sh "$work/src/dkms.conf")
[ "$got" = skip ] || fail "a 5.10 kernel: $got"
echo "PASS: Secure Boot on with dkms's key not enrolled, missing or uncheckable: build skipped with a message; otherwise 6.1 builds"

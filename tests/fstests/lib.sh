# shellcheck shell=bash
# The fstests harness's library (tests/fstests/README.md), sourced by build-root.sh, run.sh,
# table.sh and gate.sh. Builds on tests/qemu/lib.sh (kernel lookup, stock and patched btrfs.ko,
# the cache directory).
#
#   fst_locate_src          sets FST_SRC (tarball or unpacked tree) from BSG_FSTESTS_SRC, or
#                           returns 1 with FST_MISSING saying what is absent
#   fst_src_hash            identity of the fstests source (tarball sha256, or the tree's files)
#   fst_root_key            identity of the root image: package list, fstests, kernel, build script
#   fst_list_tests LIST     the tests a list file names, one a line (comments and blanks dropped)

FST_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../qemu/lib.sh
. "$FST_HERE/../qemu/lib.sh"
FST_REPO=$QEMU_REPO

fst_log() { echo "fstests: [$(date -u +%T)] $*" >&2; }

# BSG_FSTESTS_SRC: a tarball (xfstests-*.tar.xz, a `git archive` of fstests), an unpacked fstests
# tree (has `check` and `common/rc`), or a directory holding one such tarball. Default: the
# directory ../shared/fstests beside the repository's root, when it exists.
fst_locate_src() {
    local s=${BSG_FSTESTS_SRC:-} t
    FST_SRC='' FST_MISSING=''
    if [ -z "$s" ]; then
        s=$FST_REPO/../shared/fstests
        if [ ! -e "$s" ]; then
            FST_MISSING="the fstests source: BSG_FSTESTS_SRC is not set and $(realpath -m "$s") does not exist"
            return 1
        fi
    fi
    if [ -f "$s" ]; then
        case $s in
        *.tar.xz | *.tar.gz | *.tar) FST_SRC=$(realpath "$s") ;;
        *) FST_MISSING="the fstests source: $s is a file but not a tarball (.tar, .tar.gz, .tar.xz)"; return 1 ;;
        esac
    elif [ -d "$s" ]; then
        if [ -x "$s/check" ] && [ -f "$s/common/rc" ]; then
            FST_SRC=$(realpath "$s")
        else
            t=$(ls "$s"/xfstests-*.tar.xz "$s"/fstests-*.tar.xz 2>/dev/null | head -n 1)
            [ -n "$t" ] || { FST_MISSING="the fstests source: $s holds neither an fstests tree (check, common/rc) nor an xfstests-*.tar.xz"; return 1; }
            FST_SRC=$(realpath "$t")
        fi
    else
        FST_MISSING="the fstests source: BSG_FSTESTS_SRC=$s does not exist"
        return 1
    fi
}

fst_src_hash() {
    if [ -f "$FST_SRC" ]; then
        sha256sum "$FST_SRC" | cut -c1-16
    else
        (cd "$FST_SRC" && find . -type f ! -path './.git/*' -print0 | sort -z | xargs -0 sha256sum) |
            sha256sum | cut -c1-16
    fi
}

fst_packages() { grep -v -e '^#' -e '^[[:space:]]*$' "$FST_HERE/packages"; }

fst_root_key() {
    {
        fst_packages
        fst_src_hash
        echo "$QK_KVER"
        cat "$FST_HERE/build-root.sh"
    } | sha256sum | cut -c1-16
}

fst_list_tests() { sed -e 's/#.*//' -e 's/[[:space:]]//g' "$1" | grep -v '^$'; }

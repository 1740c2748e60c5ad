#!/bin/bash
# makepkg.sh WORK: builds the Arch package the way the AUR or a clean chroot would: from an empty
# directory holding only the PKGBUILD and the source tarball that packaging/make-dist.sh makes
# (source= + sha256sums, no path back into this tree), with Debian's makepkg
# (pacman-package-manager), check() included. Then checks that the package's file list equals the
# install manifest of the build makepkg made (`cmake --install` writes install_manifest.txt); man
# pages compared without makepkg's zipman .gz; then where the files are (Arch's directories, two
# rules in /etc/udev/rules.d, no initramfs-tools), what they call, and .PKGINFO's depends and the
# absence of backup entries (packaging/arch/README.md says why). makepkg refuses root, so it runs as nobody (setpriv)
# in a work directory nobody owns; --nodeps: Debian has no pacman database for the Arch dependencies.
set -euo pipefail
work=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
for t in makepkg bsdtar setpriv sha256sum; do
    command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh installs it)"
done
rm -rf "$work"
mkdir -p "$work"/{build,pkgdest,srcdest,logdest,dist,empty}
tarball=$(TMPDIR=$work "$src/packaging/make-dist.sh" "$work/dist") || fail "make-dist.sh"
[ -s "$tarball" ] && [ -s "$work/dist/PKGBUILD" ] || fail "make-dist.sh made no tarball or PKGBUILD"
# reproducible: a second run gives the same bytes (the sum in the PKGBUILD stays valid)
again=$(TMPDIR=$work "$src/packaging/make-dist.sh" "$work/dist2") || fail "make-dist.sh (second run)"
cmp -s "$tarball" "$again" || fail "make-dist.sh is not reproducible ($tarball differs from $again)"
grep -q "^sha256sums=('$(sha256sum "$tarball" | cut -d' ' -f1)')" "$work/dist/PKGBUILD" ||
    fail "the PKGBUILD beside the tarball does not carry its sha256sum"
grep -q '^check()' "$work/dist/PKGBUILD" || fail "the PKGBUILD has no check()"
# only the two files: nothing else of the tree is reachable
cp "$work/dist/PKGBUILD" "$tarball" "$work/empty/"
chown -R nobody:nogroup "$work"
start=$(date +%s)
if ! (cd "$work/empty" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work" BUILDDIR="$work/build" \
        PKGDEST="$work/pkgdest" SRCDEST="$work/srcdest" LOGDEST="$work/logdest" \
        makepkg --nodeps --noconfirm --cleanbuild --force) >"$work/makepkg.log" 2>&1; then
    tail -n 40 "$work/makepkg.log"
    fail "makepkg"
fi
grep -q 'Starting check()' "$work/makepkg.log" || fail "makepkg did not run check() (makepkg.log)"
grep -qE '[0-9]+% tests passed' "$work/makepkg.log" || fail "check() ran no tests (makepkg.log)"
# a corrupted tarball must be refused by its checksum
mkdir -p "$work/bad"
cp "$work/dist/PKGBUILD" "$work/bad/"
printf 'x' | cat "$tarball" - >"$work/bad/$(basename "$tarball")"
chown -R nobody:nogroup "$work/bad"
if (cd "$work/bad" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work" BUILDDIR="$work/build-bad" \
        makepkg --verifysource --nodeps) >"$work/makepkg-bad.log" 2>&1; then
    fail "makepkg accepted a tarball whose sha256sum differs"
fi
echo "makepkg: $(( $(date +%s) - start )) s"
pkg=$(ls "$work"/pkgdest/btrfs-scan-gate-0*.pkg.tar.*)
manifest=$work/build/btrfs-scan-gate/src/build/install_manifest.txt
[ -e "$manifest" ] || fail "no install manifest at $manifest"
bsdtar -tf "$pkg" | grep -v '^\.' | grep -v '/$' | sed 's|^|/|; s|\(/man[0-9]/[^/]*\)\.gz$|\1|' | sort >"$work/pkg.files"
sed "s|^$work/build/btrfs-scan-gate/pkg/btrfs-scan-gate||" "$manifest" | sort >"$work/manifest.files"
diff -u "$work/manifest.files" "$work/pkg.files" || fail "package files differ from the install manifest (- manifest, + package)"
# where an Arch system looks for them: all under /usr but the two rules that hide the stock ones
for f in /usr/bin/btrfs-scan-gate /etc/udev/rules.d/64-btrfs.rules /etc/udev/rules.d/64-btrfs-dm.rules \
        /usr/lib/udev/rules.d/99-btrfs-scan-gate-late.rules /usr/lib/systemd/system/btrfs-scan-gate.service \
        /usr/lib/initcpio/install/btrfs-scan-gate /usr/lib/initcpio/hooks/btrfs-scan-gate \
        /usr/lib/dracut/modules.d/90btrfs-scan-gate/module-setup.sh /usr/lib/btrfs-scan-gate/rauc-post-install; do
    grep -qx "$f" "$work/pkg.files" || fail "$f not in the package"
done
if grep -v -e '^/usr/' -e '^/etc/udev/rules.d/64-btrfs.rules$' -e '^/etc/udev/rules.d/64-btrfs-dm.rules$' "$work/pkg.files"; then
    fail "files outside /usr (above)"
fi
if grep -e '^/usr/libexec/' -e '^/usr/local/' -e '^/usr/sbin/' -e '/initramfs-tools/' "$work/pkg.files"; then
    fail "files in a place Arch does not use, or Debian's initramfs-tools files (above)"
fi
bsdtar -xOf "$pkg" etc/udev/rules.d/64-btrfs.rules >"$work/64-btrfs.rules"
grep -q '"/usr/bin/btrfs-scan-gate udev' "$work/64-btrfs.rules" || fail "the packaged rules do not call /usr/bin/btrfs-scan-gate"
grep -q '"/usr/bin/udevadm trigger' "$work/64-btrfs.rules" || fail "the packaged rules do not call /usr/bin/udevadm"
bsdtar -xOf "$pkg" usr/lib/systemd/system/btrfs-scan-gate.service | grep -qx 'ExecStart=/usr/bin/btrfs-scan-gate boot' ||
    fail "the unit's ExecStart= is not /usr/bin/btrfs-scan-gate boot"
bsdtar -xOf "$pkg" usr/lib/dracut/modules.d/90btrfs-scan-gate/module-setup.sh | grep -qx '    return 255' ||
    fail "the dracut module is not opt-in (check() without return 255)"
bsdtar -xOf "$pkg" .PKGINFO >"$work/PKGINFO"
# no backup=: an upgrade replaces the rules with the helper they call (no .pacnew drift)
if grep '^backup = ' "$work/PKGINFO"; then fail ".PKGINFO has backup entries (above)"; fi
for d in systemd systemd-libs util-linux-libs glibc; do
    grep -qx "depend = $d" "$work/PKGINFO" || fail ".PKGINFO lacks 'depend = $d'"
done
echo "PASS: $(basename "$pkg"): $(wc -l <"$work/pkg.files") files, equal to the cmake --install manifest; depends $(sed -n 's/^depend = //p' "$work/PKGINFO" | tr '\n' ' ')"

#!/bin/bash
# makepkg.sh WORK: builds packaging/arch/PKGBUILD with Debian's makepkg (pacman-package-manager)
# and checks that the package's file list equals the install manifest of the build makepkg made
# (`cmake --install` writes install_manifest.txt); man pages compared without makepkg's zipman
# .gz. makepkg refuses root, so it runs as nobody (setpriv) in a work directory nobody owns;
# --nodeps: Debian has no pacman database for the Arch dependencies.
set -euo pipefail
work=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
for t in makepkg bsdtar setpriv; do
    command -v "$t" >/dev/null || fail "$t not installed (scripts/setup.sh installs it)"
done
rm -rf "$work"
mkdir -p "$work"/{build,pkgdest,srcdest,logdest,tree}
# a copy of the tree that nobody can read (the worktree may be private to root)
(cd "$src" && git ls-files --cached --others --exclude-standard) |
    while read -r f; do [ -f "$src/$f" ] && echo "$f"; done | tar -C "$src" -cf - -T - | tar -C "$work/tree" -xf -
chown -R nobody:nogroup "$work"
start=$(date +%s)
if ! (cd "$work/tree/packaging/arch" && setpriv --reuid=nobody --regid=nogroup --clear-groups \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$work" BUILDDIR="$work/build" \
        PKGDEST="$work/pkgdest" SRCDEST="$work/srcdest" LOGDEST="$work/logdest" \
        makepkg --nodeps --noconfirm --cleanbuild --force) >"$work/makepkg.log" 2>&1; then
    tail -n 40 "$work/makepkg.log"
    fail "makepkg"
fi
echo "makepkg: $(( $(date +%s) - start )) s"
pkg=$(ls "$work"/pkgdest/btrfs-scan-gate-0*.pkg.tar.*)
manifest=$work/build/btrfs-scan-gate/src/build/install_manifest.txt
[ -e "$manifest" ] || fail "no install manifest at $manifest"
bsdtar -tf "$pkg" | grep -v '^\.' | grep -v '/$' | sed 's|^|/|; s|\(/man[0-9]/[^/]*\)\.gz$|\1|' | sort >"$work/pkg.files"
sed "s|^$work/build/btrfs-scan-gate/pkg/btrfs-scan-gate||" "$manifest" | sort >"$work/manifest.files"
diff -u "$work/manifest.files" "$work/pkg.files" || fail "package files differ from the install manifest (- manifest, + package)"
# where an Arch system looks for them
for f in /usr/bin/btrfs-scan-gate /etc/udev/rules.d/64-btrfs.rules /usr/lib/systemd/system/btrfs-scan-gate.service \
        /usr/lib/initcpio/install/btrfs-scan-gate /usr/lib/initcpio/hooks/btrfs-scan-gate; do
    grep -qx "$f" "$work/pkg.files" || fail "$f not in the package"
done
bsdtar -xOf "$pkg" etc/udev/rules.d/64-btrfs.rules | grep -q '"/usr/bin/btrfs-scan-gate udev' ||
    fail "the packaged rules do not call /usr/bin/btrfs-scan-gate"
bsdtar -xOf "$pkg" .PKGINFO >"$work/PKGINFO"
grep -q '^backup = etc/udev/rules.d/64-btrfs.rules' "$work/PKGINFO" || fail ".PKGINFO lacks the backup entry"
echo "PASS: $(basename "$pkg"): $(wc -l <"$work/pkg.files") files, equal to the cmake --install manifest"

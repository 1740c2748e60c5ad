# Sourced by the host tests whose loop devices stand in for internal storage. trusted_disk= takes
# /dev/disk/by-path/NAME only, and udev makes no such link for a loop device.
# bsg_by_path_ns "$@": once, at the top: re-executes the test in a private mount namespace (unless
# it runs in one already: BSG_BY_PATH_NS) and mounts a tmpfs over /dev/disk/by-path there, so the
# host's /dev is never changed. bsg_by_path DEV: makes /dev/disk/by-path/bsgtest-NAME -> DEV and
# prints its name.
bsg_by_path_ns() {
    [ "$(id -u)" -eq 0 ] || { echo "SKIP: not root"; exit 77; }
    if [ -z "${BSG_BY_PATH_NS:-}" ]; then
        command -v unshare >/dev/null || { echo "SKIP: unshare (util-linux) not installed"; exit 77; }
        BSG_BY_PATH_NS=1 exec unshare --mount --propagation private -- "$0" "$@"
    fi
    [ -d /dev/disk/by-path ] || mkdir -p /dev/disk/by-path
    mount -t tmpfs -o mode=0755 bsg-by-path /dev/disk/by-path
}
bsg_by_path() {
    local l="/dev/disk/by-path/bsgtest-${1##*/}"
    ln -sfn "$1" "$l"
    printf '%s\n' "$l"
}

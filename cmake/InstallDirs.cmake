# Where `cmake --install` puts the helper and its deployment files, and the paths templated into
# them (rules, unit, initramfs hooks, updater hooks). Included once from the top directory, so every
# subdirectory sees the same values. Everything follows CMAKE_INSTALL_PREFIX (GNUInstallDirs):
#
#   helper        ${CMAKE_INSTALL_BINDIR}/btrfs-scan-gate: bin, not sbin, as btrfs(8) and udevadm;
#                 the rules, the unit's ExecStart= and the hooks call exactly this path
#   udev          pkg-config udev --variable=udevdir, else /usr/lib/udev
#   systemd units pkg-config systemd --variable=systemdsystemunitdir, else /usr/lib/systemd/system
#
# pkg-config answers for the distribution's own prefix, /usr. With CMAKE_INSTALL_PREFIX=/usr the
# answer is used as it is (Debian 12: /lib/udev, /lib/systemd/system); with any other prefix the same
# directory is taken under the prefix (/usr/local/lib/udev, /usr/local/lib/systemd/system: udev and
# systemd read both). -DBSG_UDEVDIR=DIR / -DBSG_SYSTEMDSYSTEMUNITDIR=DIR override: an absolute DIR as
# given, a relative one under the prefix.
#
# The two rules files that replace the stock 64-btrfs.rules (systemd) and 64-btrfs-dm.rules
# (btrfs-progs) must hide them by name from a directory udev reads first (BSG_RULES_OVERRIDE):
#   udevdir  <udevdir>/rules.d: under /usr/local this hides the /usr/lib files; under /usr it
#            replaces them, which only a package manager that owns the names may do (Debian's
#            dpkg-divert). Default for every prefix but /usr.
#   etc      /etc/udev/rules.d, whatever the prefix: the administrator's directory, for image
#            builders and for packages that cannot own the stock names (Arch). Default for /usr.
# The gate's other rules file (99-btrfs-scan-gate-late.rules) has a name of its own: <udevdir>/rules.d.
#
# The initramfs generators read only their own directories, so a flavour's files go there whatever
# the prefix, and only the flavours asked for (BSG_INITRAMFS):
#   -DBSG_INITRAMFS="initramfs-tools;dracut;mkinitcpio" (any of them), or none;
#   default auto: each flavour whose generator directory exists on the build machine.
# Every flavour is also an install component of its own: `cmake --install BUILD --component dracut`.

# A build directory configured before these defaults followed the prefix has the old absolute
# defaults cached (/lib/udev, /lib/systemd/system, etc): forget those once, so that it gets the same
# layout as a fresh one. Values given with -D are kept.
foreach(_v BSG_UDEVDIR BSG_SYSTEMDSYSTEMUNITDIR BSG_RULES_OVERRIDE)
    get_property(_help CACHE ${_v} PROPERTY HELPSTRING)
    if(_help MATCHES "^(udev's directory \\(pkg-config|pkg-config systemd --variable|How the rules replace)")
        message(STATUS "btrfs-scan-gate: forgetting ${_v}=${${_v}}, an old default cached in this build directory")
        unset(${_v} CACHE)
    endif()
endforeach()

set(BSG_UDEVDIR "" CACHE STRING
    "udev's directory; empty: pkg-config udev udevdir (else /usr/lib/udev), under the prefix unless the prefix is /usr")
set(BSG_SYSTEMDSYSTEMUNITDIR "" CACHE STRING
    "systemd's system unit directory; empty: pkg-config systemd systemdsystemunitdir (else /usr/lib/systemd/system), under the prefix unless the prefix is /usr")
set(BSG_RULES_OVERRIDE "" CACHE STRING
    "How the rules hide the stock 64-btrfs*.rules: 'udevdir' (<udevdir>/rules.d) or 'etc' (/etc/udev/rules.d); empty: etc for the prefix /usr, udevdir otherwise")
set_property(CACHE BSG_RULES_OVERRIDE PROPERTY STRINGS "" etc udevdir)
set(BSG_INITRAMFS auto CACHE STRING
    "Initramfs integration to install: a list of initramfs-tools, dracut, mkinitcpio; 'none'; or 'auto' (the generators found on this machine)")
set(BSG_INITRAMFSTOOLSDIR /usr/share/initramfs-tools CACHE PATH "initramfs-tools' directory (hooks/, scripts/)")
pkg_get_variable(_bsg_dracutdir dracut dracutmodulesdir)
if(NOT _bsg_dracutdir)
    set(_bsg_dracutdir /usr/lib/dracut/modules.d)
endif()
set(BSG_DRACUTMODULESDIR "${_bsg_dracutdir}" CACHE PATH "dracut's modules.d (pkg-config dracut dracutmodulesdir)")
set(BSG_MKINITCPIODIR /usr/lib/initcpio CACHE PATH "mkinitcpio's hook directory (install/, hooks/)")
set(BSG_CONFIG_PATH /etc/btrfs-scan-gate.conf CACHE FILEPATH "The helper's configuration file")
set(BSG_UDEVADM /bin/udevadm CACHE FILEPATH "udevadm as the rules' RUN+= calls it (as stock 64-btrfs.rules)")

string(REGEX REPLACE "(.)/+$" "\\1" _bsg_prefix "${CMAKE_INSTALL_PREFIX}")

# bsg_dir(OUT VALUE PCNAME PCVAR FALLBACK): OUT is VALUE if set (relative: under the prefix), else
# pkg-config's answer (or FALLBACK) for the prefix /usr, or that answer moved under the prefix.
function(bsg_dir out value pcname pcvar fallback)
    if(NOT value STREQUAL "")
        if(IS_ABSOLUTE "${value}")
            set(${out} "${value}" PARENT_SCOPE)
        else()
            set(${out} "${_bsg_prefix}/${value}" PARENT_SCOPE)
        endif()
        return()
    endif()
    pkg_get_variable(answer ${pcname} ${pcvar})
    if(NOT answer)
        set(answer "${fallback}")
    endif()
    if(_bsg_prefix STREQUAL "/usr")
        set(${out} "${answer}" PARENT_SCOPE)
    else()
        # /usr/lib/udev and /lib/udev alike are lib/udev below the distribution's prefix
        string(REGEX REPLACE "^/(usr/)?" "" rel "${answer}")
        set(${out} "${_bsg_prefix}/${rel}" PARENT_SCOPE)
    endif()
endfunction()
bsg_dir(BSG_FULL_UDEVDIR "${BSG_UDEVDIR}" udev udevdir /usr/lib/udev)
bsg_dir(BSG_FULL_SYSTEMDSYSTEMUNITDIR "${BSG_SYSTEMDSYSTEMUNITDIR}" systemd systemdsystemunitdir
    /usr/lib/systemd/system)

set(_bsg_override "${BSG_RULES_OVERRIDE}")
if(_bsg_override STREQUAL "")
    if(_bsg_prefix STREQUAL "/usr")
        set(_bsg_override etc)
    else()
        set(_bsg_override udevdir)
    endif()
endif()
if(_bsg_override STREQUAL "etc")
    set(BSG_FULL_RULESDIR /etc/udev/rules.d)
elseif(_bsg_override STREQUAL "udevdir")
    set(BSG_FULL_RULESDIR ${BSG_FULL_UDEVDIR}/rules.d)
else()
    message(FATAL_ERROR "BSG_RULES_OVERRIDE must be 'etc', 'udevdir' or empty, not '${BSG_RULES_OVERRIDE}'")
endif()

set(_bsg_flavours initramfs-tools dracut mkinitcpio)
if(BSG_INITRAMFS STREQUAL "auto")
    set(BSG_INITRAMFS_SELECTED)
    if(EXISTS ${BSG_INITRAMFSTOOLSDIR})
        list(APPEND BSG_INITRAMFS_SELECTED initramfs-tools)
    endif()
    if(EXISTS ${BSG_DRACUTMODULESDIR})
        list(APPEND BSG_INITRAMFS_SELECTED dracut)
    endif()
    if(EXISTS ${BSG_MKINITCPIODIR})
        list(APPEND BSG_INITRAMFS_SELECTED mkinitcpio)
    endif()
elseif(BSG_INITRAMFS STREQUAL "none" OR BSG_INITRAMFS STREQUAL "")
    set(BSG_INITRAMFS_SELECTED)
else()
    set(BSG_INITRAMFS_SELECTED ${BSG_INITRAMFS})
    foreach(_f IN LISTS BSG_INITRAMFS_SELECTED)
        if(NOT _f IN_LIST _bsg_flavours)
            message(FATAL_ERROR "BSG_INITRAMFS: '${_f}' is none of ${_bsg_flavours} (or give 'none' or 'auto')")
        endif()
    endforeach()
endif()

# the helper: the one path every caller is templated with, and where install() puts it
set(BSG_HELPER_PATH "${CMAKE_INSTALL_FULL_BINDIR}/btrfs-scan-gate")
set(BSG_FULL_DOCDIR ${CMAKE_INSTALL_FULL_DOCDIR})
set(BSG_UPDATER_HOOKDIR ${CMAKE_INSTALL_FULL_LIBEXECDIR}/btrfs-scan-gate)

if(BSG_INITRAMFS_SELECTED)
    string(REPLACE ";" ", " _bsg_list "${BSG_INITRAMFS_SELECTED}")
else()
    set(_bsg_list "none (the gate is not in the initramfs: see BSG_INITRAMFS)")
endif()
message(STATUS "btrfs-scan-gate: helper ${BSG_HELPER_PATH}; rules ${BSG_FULL_RULESDIR} (${_bsg_override}), "
    "${BSG_FULL_UDEVDIR}/rules.d; unit ${BSG_FULL_SYSTEMDSYSTEMUNITDIR}; initramfs (BSG_INITRAMFS=${BSG_INITRAMFS}): ${_bsg_list}")

# The templated files name the paths above: an install prefix changed at install time
# (`cmake --install --prefix`) would put files where nothing calls them. Refuse it.
install(CODE "
if(NOT CMAKE_INSTALL_PREFIX STREQUAL \"${CMAKE_INSTALL_PREFIX}\")
    message(FATAL_ERROR \"btrfs-scan-gate was configured for the prefix ${CMAKE_INSTALL_PREFIX}, and its rules, unit and hooks call the helper there: configure again with -DCMAKE_INSTALL_PREFIX=\${CMAKE_INSTALL_PREFIX} instead of `cmake --install --prefix`\")
endif()")

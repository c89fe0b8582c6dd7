# SPDX-License-Identifier: MIT
# Install layout, the exported CMake package, odl.pc and the CPack Debian
# packages. The install() rules of each part sit in its own folder's
# CMakeLists.txt, by component:
#   runtime  package odl            odl CLI, libodl.so.0, odl-daemon + unit + bus policy, udev rule, modules-load.d
#   dev      package libodl-dev     headers, libodl.so, odl.pc, CMake config
#   plugin   package odl-nccl-plugin  <libdir>/odl/lib{nccl,rccl}-net-odl.so
#   dkms     package odl-tb5-dkms   /usr/src/odl_tb5-VERSION (kmod/ + include/)
#   model    package odl-model      odl-model (odl run, odl model), odl-linkd
#   tray     package odl-tray       odl-tray (GTK tray indicator), its icons and menu entry
#   (no component) odl-tb5-modules-KVER  odl_tb5.ko for one kernel release (odl package --kernel)
# Version: project(VERSION) in the root CMakeLists.txt; the package version
# adds the source id (cmake/OdlBuildInfo.cmake), read when cpack runs, so
# the packages name the commit their binaries were built from.

set(ODL_PACKAGE_MAINTAINER "The OdinLink developers <odinlink@example.org>" CACHE STRING
    "Maintainer field (and changelog trailer) of the Debian packages")
set(ODL_PACKAGING_DIR ${PROJECT_SOURCE_DIR}/cmake/packaging)
set(ODL_CMAKE_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/odl)
set(ODL_DKMS_PACKAGE odl-tb5-dkms)

# copyright and a changelog for one package (Debian policy 12.5, 12.7).
function(odl_install_package_docs component package)
  install(FILES ${ODL_PACKAGING_DIR}/debian/copyright
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
  install(CODE "set(ODL_PKG \"${package}\")
set(ODL_VERSION \"${PROJECT_VERSION}\")
set(ODL_ID_FILE \"${PROJECT_BINARY_DIR}/build-info/odl-source-id.txt\")
set(ODL_DOCDIR \"${CMAKE_INSTALL_DATAROOTDIR}/doc\")
set(ODL_MAINTAINER \"${ODL_PACKAGE_MAINTAINER}\")
include(\"${ODL_PACKAGING_DIR}/changelog.cmake\")" COMPONENT ${component})
endfunction()

# --- the CMake package and odl.pc (component dev) ---------------------------
if(TARGET odl)
  include(CMakePackageConfigHelpers)
  install(EXPORT odlTargets NAMESPACE odl:: DESTINATION ${ODL_CMAKE_CONFIG_DIR} COMPONENT dev)
  configure_package_config_file(${ODL_PACKAGING_DIR}/odlConfig.cmake.in
    ${PROJECT_BINARY_DIR}/packaging/odlConfig.cmake INSTALL_DESTINATION ${ODL_CMAKE_CONFIG_DIR})
  # 0.x: minor versions may break the API (SameMinorVersion); from 1.0 on, SameMajorVersion.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/packaging/odlConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/odlConfig.cmake
                ${PROJECT_BINARY_DIR}/packaging/odlConfigVersion.cmake
          DESTINATION ${ODL_CMAKE_CONFIG_DIR} COMPONENT dev)
  file(RELATIVE_PATH ODL_PC_RELATIVE_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
  configure_file(${ODL_PACKAGING_DIR}/odl.pc.in ${PROJECT_BINARY_DIR}/packaging/odl.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/packaging/odl.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endif()

# --- per-package docs ---------------------------------------------------------
get_cmake_property(_odl_components COMPONENTS)
set(ODL_PACKAGE_NAME_runtime odl)
set(ODL_PACKAGE_NAME_dev libodl-dev)
set(ODL_PACKAGE_NAME_plugin odl-nccl-plugin)
set(ODL_PACKAGE_NAME_dkms ${ODL_DKMS_PACKAGE})
set(ODL_PACKAGE_NAME_model odl-model)
set(ODL_PACKAGE_NAME_tray odl-tray)
set(ODL_PACKAGE_COMPONENTS)
foreach(c runtime dev plugin dkms model tray)
  if(c IN_LIST _odl_components)
    odl_install_package_docs(${c} ${ODL_PACKAGE_NAME_${c}})
    list(APPEND ODL_PACKAGE_COMPONENTS ${c})
  endif()
endforeach()

# --- CPack: one .deb per component ---------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME odl)
set(CPACK_PACKAGE_VENDOR "The OdinLink developers")
set(CPACK_PACKAGE_CONTACT "${ODL_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL ${ODL_PACKAGE_COMPONENTS})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# DEBIAN/shlibs for libodl.so.0 (the only library with a SONAME).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME odl)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "passwd")
# The module: DKMS's source package, or one built for a kernel release
# (odl-tb5-modules-KVER, `odl package --kernel`; it provides odl-tb5-modules).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "${ODL_DKMS_PACKAGE} | odl-tb5-modules, dbus")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "odl-nccl-plugin, odl-model")
# Own postinst/postrm (group odl, udev reload) and an ldconfig trigger
# instead of CPack's ldconfig calls in maintainer scripts.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${ODL_PACKAGING_DIR}/debian/odl/postinst ${ODL_PACKAGING_DIR}/debian/odl/prerm
    ${ODL_PACKAGING_DIR}/debian/odl/postrm ${ODL_PACKAGING_DIR}/debian/odl/triggers)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "OdinLink host-to-host link over Thunderbolt 5 / USB4: odl tool and libodl
OdinLink turns a Thunderbolt 5 / USB4 cable between two hosts into a fast
interconnect (DMA over the USB4 host interface rings). This package holds the
odl command-line tool (doctor, link, perf suite, plugin statistics, files
between the hosts, hardware-in-the-loop runs), the shared library libodl.so.0,
odl-daemon (devices and peers on D-Bus, a systemd service), the udev rule
for /dev/odl_tb5_N (group odl) and the boot-time load of the odl_tb5 kernel
module, which odl-tb5-dkms provides.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libodl-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "OdinLink host-to-host link: libodl development files
Headers of the libodl C API (odl/odl.h) and its C++ wrapper (odl/odl.hpp),
the wire-format and odl_tb5 ioctl headers, libodl.so, the pkg-config file
odl.pc and the CMake package: find_package(odl) gives the target odl::odl.")

set(CPACK_DEBIAN_PLUGIN_PACKAGE_NAME odl-nccl-plugin)
set(CPACK_COMPONENT_PLUGIN_DESCRIPTION
  "OdinLink host-to-host link: NCCL and RCCL net plugin
The net plugin \"ODL\" for NCCL (libnccl-net-odl.so) and RCCL
(librccl-net-odl.so): collectives between two hosts over an OdinLink cable.
Select it with NCCL_NET_PLUGIN=/usr/${CMAKE_INSTALL_LIBDIR}/odl/libnccl-net-odl.so
and NCCL_NET=ODL. Beside them, odl-plugin-collective runs a checked ring
all-reduce or all-gather through the plugin on host memory, for hosts
without a GPU.")

set(CPACK_DEBIAN_DKMS_PACKAGE_NAME ${ODL_DKMS_PACKAGE})
set(CPACK_DEBIAN_DKMS_PACKAGE_SECTION kernel)
set(CPACK_DEBIAN_DKMS_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_DKMS_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DKMS_PACKAGE_DEPENDS "dkms (>= 3)")
set(CPACK_DEBIAN_DKMS_PACKAGE_SUGGESTS "mokutil")
# One odl_tb5 per host: a prebuilt odl-tb5-modules-KVER is replaced.
set(CPACK_DEBIAN_DKMS_PACKAGE_CONFLICTS "odl-tb5-modules")
foreach(script postinst prerm)
  configure_file(${ODL_PACKAGING_DIR}/debian/odl-tb5-dkms/${script}.in
                 ${PROJECT_BINARY_DIR}/packaging/dkms/${script} @ONLY)
  list(APPEND CPACK_DEBIAN_DKMS_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/packaging/dkms/${script})
endforeach()
set(CPACK_COMPONENT_DKMS_DESCRIPTION
  "OdinLink host-to-host link: odl_tb5 kernel module (DKMS source)
Source of odl_tb5, the Thunderbolt / USB4 service driver of OdinLink, built
by DKMS for each installed kernel and loaded on installation. Under Secure
Boot, DKMS's signing key has to be enrolled once with mokutil; the
installation says how when the kernel refuses the module.")

set(CPACK_DEBIAN_MODEL_PACKAGE_NAME odl-model)
set(CPACK_DEBIAN_MODEL_PACKAGE_SECTION science)
set(CPACK_COMPONENT_MODEL_DESCRIPTION
  "OdinLink host-to-host link: SystemC model and modelling commands
odl-model runs scenario replays and latency modelling on the SystemC model of
the USB4 host interface, router and cable ('odl run', 'odl model sweep');
odl-linkd is the model server the emulated QEMU device connects to. Kept
apart from the odl package so that lab hosts need no simulator.")

set(CPACK_DEBIAN_TRAY_PACKAGE_NAME odl-tray)
set(CPACK_DEBIAN_TRAY_PACKAGE_SECTION x11)
set(CPACK_COMPONENT_TRAY_DESCRIPTION
  "OdinLink host-to-host link: tray indicator
odl-tray shows the state of this host's OdinLink links in the desktop's
notification area (connected, below the port's rating, disconnected, daemon
down), lists each peer with its link and last test, opens odl-daemon's status
page and runs a latency test from its menu.
Kept apart from the odl package so that hosts without a desktop need no GTK.")

# odl-tb5-modules-KVER, made by `odl package --kernel KVER` after cpack: the
# module built for one kernel release (cmake/packaging/modules-deb.sh.in).
configure_file(${ODL_PACKAGING_DIR}/modules-deb.sh.in ${PROJECT_BINARY_DIR}/packaging/odl-modules-deb @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ
                                WORLD_EXECUTE)

# Version and inter-package dependencies are set when cpack runs, from the
# source id of the build being packaged.
configure_file(${ODL_PACKAGING_DIR}/cpack_project_config.cmake.in
               ${PROJECT_BINARY_DIR}/packaging/cpack_project_config.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${PROJECT_BINARY_DIR}/packaging/cpack_project_config.cmake)

include(CPack)

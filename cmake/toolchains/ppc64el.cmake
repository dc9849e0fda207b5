# Cross build for little-endian 64-bit POWER (Debian ppc64el). See cross-common.cmake.
set(MQD_CROSS_TRIPLE powerpc64le-linux-gnu)
set(MQD_CROSS_PROCESSOR ppc64le)
set(MQD_CROSS_EMULATOR_KIND qemu-ppc64le)
include(${CMAKE_CURRENT_LIST_DIR}/cross-common.cmake)

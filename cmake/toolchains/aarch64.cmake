# Cross build for 64-bit ARM (Debian arm64). See cross-common.cmake.
set(MQD_CROSS_TRIPLE aarch64-linux-gnu)
set(MQD_CROSS_PROCESSOR aarch64)
set(MQD_CROSS_EMULATOR_KIND qemu-aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/cross-common.cmake)

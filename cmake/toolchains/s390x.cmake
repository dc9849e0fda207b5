# Cross build for IBM Z (Debian s390x), the big-endian target. See cross-common.cmake.
set(MQD_CROSS_TRIPLE s390x-linux-gnu)
set(MQD_CROSS_PROCESSOR s390x)
set(MQD_CROSS_EMULATOR_KIND qemu-s390x)
include(${CMAKE_CURRENT_LIST_DIR}/cross-common.cmake)

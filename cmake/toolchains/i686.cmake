# Cross build for 32-bit x86 (Debian i386): the 32-bit debugger side. Its programs run through
# the sysroot's own loader where the kernel executes i386 programs, else under qemu-i386 (the
# toolchain probes which, see cross-common.cmake).
set(MQD_CROSS_TRIPLE i386-linux-gnu)
set(MQD_CROSS_PROCESSOR i686)
set(MQD_CROSS_EMULATOR_KIND loader)
set(MQD_CROSS_LOADER ld-linux.so.2)
include(${CMAKE_CURRENT_LIST_DIR}/cross-common.cmake)
set(CMAKE_C_COMPILER i686-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER i686-linux-gnu-g++)

# Shared part of the cross toolchain files (included by <arch>.cmake after it sets
# MQD_CROSS_TRIPLE, MQD_CROSS_PROCESSOR and MQD_CROSS_EMULATOR_KIND).
#
# The sysroot (tools/cross/make-sysroot.sh) supplies the libraries we link (capnp, kj, libuv,
# zstd, Open MPI) and the run-time files qemu-user needs; libc and libstdc++ headers come from
# the Debian cross toolchain (<triple>-g++), so no --sysroot is passed to the compiler. Every
# find_*, find_package and pkg-config look-up is confined to the sysroot: a foreign build must
# never pick up this host's headers or libraries (tools/cross/check-confined.cmake checks the
# result). ctest runs target programs through CMAKE_CROSSCOMPILING_EMULATOR: qemu-<arch> -L
# SYSROOT; for i686 the sysroot's own dynamic loader where the kernel runs i386 programs, else
# qemu-i386 (see below).
#
# Input: MQD_SYSROOT (cache variable or environment variable), an absolute path.
if(NOT MQD_SYSROOT AND DEFINED ENV{MQD_SYSROOT})
  set(MQD_SYSROOT "$ENV{MQD_SYSROOT}")
endif()
if(NOT MQD_SYSROOT OR NOT IS_DIRECTORY "${MQD_SYSROOT}/usr/lib/${MQD_CROSS_TRIPLE}")
  message(FATAL_ERROR "MQD_SYSROOT must name a sysroot for ${MQD_CROSS_TRIPLE} "
                      "(tools/cross/make-sysroot.sh); got '${MQD_SYSROOT}'")
endif()
set(MQD_SYSROOT "${MQD_SYSROOT}" CACHE PATH "Sysroot of the target architecture")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES MQD_SYSROOT)

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${MQD_CROSS_PROCESSOR})
set(CMAKE_LIBRARY_ARCHITECTURE ${MQD_CROSS_TRIPLE})
set(CMAKE_C_COMPILER ${MQD_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${MQD_CROSS_TRIPLE}-g++)

# Headers: compile with --sysroot, so that the cross compiler's /usr/include means the sysroot's
# (without it, a header missing from the sysroot would silently come from this host). Link
# without it: crt files, libc and libstdc++ come from the cross toolchain.
set(CMAKE_SYSROOT_COMPILE "${MQD_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${MQD_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # build tools (capnp, python3) are the host's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(ENV{PKG_CONFIG_LIBDIR}
    "${MQD_SYSROOT}/usr/lib/${MQD_CROSS_TRIPLE}/pkgconfig:${MQD_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${MQD_SYSROOT}")

# Shared libraries' own dependencies (libkj for libcapnp-rpc, ...) resolve in the sysroot.
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT
      "-Wl,-rpath-link,${MQD_SYSROOT}/usr/lib/${MQD_CROSS_TRIPLE} -Wl,-rpath-link,${MQD_SYSROOT}/lib/${MQD_CROSS_TRIPLE}")
endforeach()

if(MQD_CROSS_EMULATOR_KIND STREQUAL "loader")
  # i386 programs (the 32-bit debugger side) run natively only where the kernel executes them:
  # IA-32 emulation, which many cloud, container and hardened kernels turn off (execve then
  # fails with ENOEXEC). Decide by trying, once per build directory: run the sysroot's own
  # dynamic loader, an i386 program like any other. Where it runs, ctest runs the tests through
  # it; where it does not, through qemu-i386 (qemu-user, which the cross tests install anyway).
  # MQD_CROSS_RUNNER records the choice and MQD_CROSS_RUNNER_WHY the probe's answer;
  # tests/cross/run-cross-tests.sh prints them before the tests run.
  set(loader "${MQD_SYSROOT}/lib/${MQD_CROSS_LOADER}")
  set(libpath "${MQD_SYSROOT}/usr/lib/${MQD_CROSS_TRIPLE}:${MQD_SYSROOT}/lib/${MQD_CROSS_TRIPLE}")
  if(NOT DEFINED CACHE{MQD_CROSS_RUNNER})
    execute_process(COMMAND "${loader}" --version RESULT_VARIABLE probe_rc
                    OUTPUT_QUIET ERROR_VARIABLE probe_err)
    string(STRIP "${probe_err}" probe_err)
    if(probe_rc EQUAL 0)
      set(runner native)
      set(why "the kernel runs i386 programs (${loader} --version exits 0)")
    else()
      set(runner qemu-i386)
      set(why "the kernel refuses i386 programs (${loader} --version: ${probe_rc} ${probe_err})")
    endif()
    set(MQD_CROSS_RUNNER ${runner} CACHE STRING "How i386 programs run here: native or qemu-i386")
    set(MQD_CROSS_RUNNER_WHY "${why}" CACHE STRING "The probe that chose MQD_CROSS_RUNNER")
    message(STATUS "i386 programs run ${runner}: ${why}")
  endif()
  if(MQD_CROSS_RUNNER STREQUAL "native")
    set(CMAKE_CROSSCOMPILING_EMULATOR "${loader}" --library-path "${libpath}")
  else()
    find_program(MQD_QEMU_I386 qemu-i386)
    if(NOT MQD_QEMU_I386)
      message(FATAL_ERROR "This kernel does not run i386 programs (${MQD_CROSS_RUNNER_WHY}), "
                          "and qemu-i386 is missing: install qemu-user "
                          "(tools/install-deps.sh --cross)")
    endif()
    set(CMAKE_CROSSCOMPILING_EMULATOR "${MQD_QEMU_I386}" -L "${MQD_SYSROOT}"
        -E "LD_LIBRARY_PATH=${libpath}")
  endif()
else()
  set(CMAKE_CROSSCOMPILING_EMULATOR ${MQD_CROSS_EMULATOR_KIND} -L "${MQD_SYSROOT}")
endif()

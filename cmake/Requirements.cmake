# What each build option needs from the machine beyond the build's own libraries, checked once,
# at configure time, for the options that are on (the top-level CMakeLists.txt calls
# mqd_check_requirements()). A missing program or package fails the configure with one
# sentence naming it, its Debian package and the option that needs it; nothing is left out
# silently. docs/configuration.md, "Build options (CMake)", has the same list;
# tools/install-deps.sh installs it.
#
# Found here, as cache variables the test folders use:
#   MQD_TESTS            doctest, MQD_PYTHON3, MQD_PYTEST, MQD_OPENSSL
#   MQD_TESTS_MPI        MPI::MPI_C, MQD_MPIRUN, MQD_GDB, MQD_GDBSERVER, MQD_OMPI_MSGQ_DLL
#   MQD_TESTS_MPICH      MQD_MPICH_PREFIX checked (and MQD_TESTS_MPI)
#   MQD_TESTS_SSH        MQD_SSHD, MQD_SSH, MQD_SSH_KEYGEN
#   MQD_TESTS_ANALYSIS   MQD_DOT, MQD_MYPY; with MQD_TESTS_MPI also MQD_CHROMIUM
#   MQD_TESTS_PACKAGING  MQD_SYSTEMD_ANALYZE, MQD_SOCKET_ACTIVATE, MQD_LINTIAN, MQD_SHLIBDEPS,
#                        MQD_FILE, MQD_HELP2MAN (and MQD_TESTS_MPI)
#   MQD_TESTS_DEBIAN13   MQD_MMDEBSTRAP, MQD_UNSHARE (and root)
#   MQD_TESTS_CLUSTER    MQD_SLURMCTLD, MQD_SLURMD, MQD_SRUN, MQD_MUNGED, MQD_IP, MQD_NSENTER,
#                        MQD_UNSHARE (and MQD_TESTS_MPI, root)
#   MQD_TESTS_ARM_NODE   MQD_QEMU_SYSTEM_AARCH64, MQD_MMDEBSTRAP, MQD_CPIO (and MQD_TESTS_MPI,
#                        aarch64 in MQD_CROSS, whose build has the node's programs)
#   MQD_SANITIZED_COPY   gcc's ASan and UBSan runtimes
#   MQD_FUZZ             MQD_CLANG_C, MQD_CLANG_CXX and clang's libFuzzer
#   MQD_CROSS            per architecture its cross compiler; for a target platform its
#                        qemu-user emulator and gdb-multiarch
#   MQD_COMPILER_CACHE   MQD_CCACHE

# The sentence. OPTION may be "MQD_CROSS=<arch>", whose way out is a shorter list.
function(mqd_requirement_missing option what package)
  if(option MATCHES "^MQD_CROSS=(.*)$")
    set(off "leave ${CMAKE_MATCH_1} out of MQD_CROSS")
    set(script "tools/install-deps.sh --cross")
  elseif(option STREQUAL "MQD_TESTS" OR option STREQUAL "MQD_TESTS_MPI")
    set(off "configure with -D${option}=OFF")
    set(script "tools/install-deps.sh")
  elseif(option STREQUAL "MQD_COMPILER_CACHE")
    set(off "configure with -D${option}= (empty: no compiler cache)")
    set(script "tools/install-deps.sh")
  else()
    set(off "configure with -D${option}=OFF")
    set(script "tools/install-deps.sh --test")
  endif()
  message(FATAL_ERROR "${option} needs ${what} (Debian package ${package}, which ${script} "
                      "installs): install it, or ${off}.")
endfunction()

# mqd_require_program(VAR OPTION PACKAGE NAME [find_program arguments...]): VAR, a cache
# variable, is the program NAME, else the configure fails naming OPTION and PACKAGE. A VAR
# given on the command line (-DMQD_PYTEST=...) must name an existing file too.
function(mqd_require_program var option package name)
  find_program(${var} NAMES ${name} ${ARGN})
  if(NOT ${var})
    mqd_requirement_missing(${option} ${name} ${package})
  elseif(NOT EXISTS "${${var}}" OR IS_DIRECTORY "${${var}}")
    mqd_requirement_missing(${option} "${name} (${var}=${${var}} does not exist)" ${package})
  endif()
endfunction()

# mqd_require_root(OPTION WHAT): the configure fails unless it runs as root, saying that OPTION
# WHAT, which needs root.
function(mqd_require_root option what)
  execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT uid STREQUAL "0")
    message(FATAL_ERROR "${option} ${what}, which needs root: run as root, or configure with "
                        "-D${option}=OFF.")
  endif()
endfunction()

macro(mqd_check_requirements)
  if(MQD_COMPILER_CACHE)
    mqd_require_program(MQD_CCACHE MQD_COMPILER_CACHE ccache ccache)
  endif()
  if(MQD_TESTS)
    find_package(doctest QUIET)
    if(NOT doctest_FOUND)
      mqd_requirement_missing(MQD_TESTS doctest doctest-dev)
    endif()
    if(MQD_CROSS_ROLE STREQUAL "")
      mqd_require_program(MQD_PYTHON3 MQD_TESTS python3 python3)
      mqd_require_program(MQD_PYTEST MQD_TESTS python3-pytest pytest-3)  # tests/cli/
      mqd_require_program(MQD_OPENSSL MQD_TESTS openssl openssl)  # tests/integration: certificates
    endif()
  endif()
  foreach(option MQD_TESTS_MPI MQD_TESTS_MPICH MQD_TESTS_SSH MQD_TESTS_ANALYSIS MQD_TESTS_PACKAGING
                 MQD_TESTS_DEBIAN13 MQD_TESTS_ARM_NODE MQD_TESTS_CLUSTER)
    if(${option} AND NOT MQD_TESTS)
      message(FATAL_ERROR "${option} adds tests: it needs MQD_TESTS=ON.")
    endif()
  endforeach()

  if(MQD_TESTS_MPI)
    find_package(MPI COMPONENTS C QUIET)
    if(NOT MPI_C_FOUND)
      mqd_requirement_missing(MQD_TESTS_MPI "Open MPI's mpicc and mpi.h" libopenmpi-dev)
    endif()
    mqd_require_program(MQD_MPIRUN MQD_TESTS_MPI openmpi-bin mpirun)
    mqd_require_program(MQD_GDB MQD_TESTS_MPI gdb gdb)
    mqd_require_program(MQD_GDBSERVER MQD_TESTS_MPI gdbserver gdbserver)  # e2e-attach-openmpi
    # Debian 12's Open MPI 4.1 (libopenmpi3) or Debian 13's Open MPI 5.0 (libopenmpi40)
    find_file(MQD_OMPI_MSGQ_DLL libompi_dbg_msgq.so
              PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openmpi/lib/openmpi3
                    /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openmpi/lib/openmpi40 NO_DEFAULT_PATH)
    if(NOT MQD_OMPI_MSGQ_DLL)
      mqd_requirement_missing(MQD_TESTS_MPI "Open MPI's message-queue DLL libompi_dbg_msgq.so"
                              "libopenmpi3 or libopenmpi40")
    endif()
  endif()

  if(MQD_TESTS_MPICH)
    if(NOT MQD_TESTS_MPI)
      message(FATAL_ERROR "MQD_TESTS_MPICH needs MQD_TESTS_MPI=ON (its tests share the Open MPI "
                          "tests' gdb, front end and recording tools): turn it on, or configure "
                          "with -DMQD_TESTS_MPICH=OFF.")
    endif()
    # Not a Debian package: Debian's mpich ships no DLL. The script builds one from Debian's
    # source package into a cache outside the build (docs/mpich.md, "The build").
    foreach(file bin/mpicc bin/mpiexec lib/libtvmpich.so .mqd-mpich-stamp)
      if(MQD_MPICH_PREFIX STREQUAL "" OR NOT EXISTS "${MQD_MPICH_PREFIX}/${file}")
        message(FATAL_ERROR "MQD_TESTS_MPICH needs an MPICH with its DLL (MQD_MPICH_PREFIX="
                "\"${MQD_MPICH_PREFIX}\" has no ${file}): configure with "
                "-DMQD_MPICH_PREFIX=$(tools/mpich/build-mpich.sh), which builds it once into a "
                "cache, or with -DMQD_TESTS_MPICH=OFF.")
      endif()
    endforeach()
  endif()

  if(MQD_TESTS_DEBIAN13)
    # A Debian 13 root (tools/release-root/): made by mmdebstrap, entered in a mount namespace
    # of its own (unshare), as root.
    mqd_require_program(MQD_MMDEBSTRAP MQD_TESTS_DEBIAN13 mmdebstrap mmdebstrap)
    mqd_require_program(MQD_UNSHARE MQD_TESTS_DEBIAN13 util-linux unshare)
    mqd_require_root(MQD_TESTS_DEBIAN13 "makes and enters a Debian root")
  endif()

  if(MQD_TESTS_CLUSTER)
    # The simulated cluster (tools/cluster/): a node per set of namespaces, each with its slurmd,
    # slurmctld and munged on this host; made and entered as root. Its jobs are Open MPI's.
    if(NOT MQD_TESTS_MPI)
      message(FATAL_ERROR "MQD_TESTS_CLUSTER runs Open MPI jobs on the simulated cluster: it needs "
                          "MQD_TESTS_MPI=ON (or configure with -DMQD_TESTS_CLUSTER=OFF).")
    endif()
    mqd_require_program(MQD_SLURMCTLD MQD_TESTS_CLUSTER slurmctld slurmctld)
    mqd_require_program(MQD_SLURMD MQD_TESTS_CLUSTER slurmd slurmd)
    mqd_require_program(MQD_SRUN MQD_TESTS_CLUSTER slurm-client srun)
    mqd_require_program(MQD_MUNGED MQD_TESTS_CLUSTER munge munged)
    mqd_require_program(MQD_IP MQD_TESTS_CLUSTER iproute2 ip)
    mqd_require_program(MQD_NSENTER MQD_TESTS_CLUSTER util-linux nsenter)
    mqd_require_program(MQD_UNSHARE MQD_TESTS_CLUSTER util-linux unshare)
    mqd_require_root(MQD_TESTS_CLUSTER "makes namespaces, links and Slurm's daemons")
  endif()

  if(MQD_TESTS_ARM_NODE)
    # The node (tools/arm-node/): its image made by mmdebstrap from Debian's arm64 packages and
    # packed by cpio, booted by qemu-system-aarch64; its programs come from the aarch64 cross
    # build, the job and the debugger's side from MQD_TESTS_MPI's.
    if(NOT MQD_TESTS_MPI OR NOT "aarch64" IN_LIST MQD_CROSS)
      message(FATAL_ERROR "MQD_TESTS_ARM_NODE runs the aarch64 build's server and MPI program on "
                          "the node and this build's gdb front end: it needs MQD_TESTS_MPI=ON and "
                          "aarch64 in MQD_CROSS (or configure with -DMQD_TESTS_ARM_NODE=OFF).")
    endif()
    mqd_require_program(MQD_QEMU_SYSTEM_AARCH64 MQD_TESTS_ARM_NODE qemu-system-arm
                        qemu-system-aarch64)
    mqd_require_program(MQD_MMDEBSTRAP MQD_TESTS_ARM_NODE mmdebstrap mmdebstrap)
    mqd_require_program(MQD_CPIO MQD_TESTS_ARM_NODE cpio cpio)
  endif()

  if(MQD_TESTS_SSH)
    mqd_require_program(MQD_SSHD MQD_TESTS_SSH openssh-server sshd PATHS /usr/sbin NO_DEFAULT_PATH)
    mqd_require_program(MQD_SSH MQD_TESTS_SSH openssh-client ssh)
    mqd_require_program(MQD_SSH_KEYGEN MQD_TESTS_SSH openssh-client ssh-keygen)
  endif()

  if(MQD_TESTS_ANALYSIS)
    mqd_require_program(MQD_DOT MQD_TESTS_ANALYSIS graphviz dot)
    mqd_require_program(MQD_MYPY MQD_TESTS_ANALYSIS mypy mypy)  # frontend-types (tests/frontend/)
    if(MQD_TESTS_MPI)  # two cases of the hang suite render their report (tests/deadlock/)
      mqd_require_program(MQD_CHROMIUM MQD_TESTS_ANALYSIS chromium chromium)
    endif()
  endif()

  if(MQD_TESTS_PACKAGING)
    if(NOT MQD_TESTS_MPI)
      message(FATAL_ERROR "MQD_TESTS_PACKAGING needs MQD_TESTS_MPI=ON (packaging-deb runs a live "
                          "Open MPI job from the installed package): turn it on, or configure "
                          "with -DMQD_TESTS_PACKAGING=OFF.")
    endif()
    mqd_require_program(MQD_SYSTEMD_ANALYZE MQD_TESTS_PACKAGING systemd systemd-analyze)
    mqd_require_program(MQD_SOCKET_ACTIVATE MQD_TESTS_PACKAGING systemd systemd-socket-activate)
    mqd_require_program(MQD_LINTIAN MQD_TESTS_PACKAGING lintian lintian)
    mqd_require_program(MQD_SHLIBDEPS MQD_TESTS_PACKAGING dpkg-dev dpkg-shlibdeps)
    mqd_require_program(MQD_FILE MQD_TESTS_PACKAGING file file)
    mqd_require_program(MQD_HELP2MAN MQD_TESTS_PACKAGING help2man help2man)
  endif()

  if(MQD_SANITIZED_COPY OR MQD_SANITIZE MATCHES "address|undefined")
    # gcc names its runtimes here only when they are installed (else it echoes the bare name).
    set(option MQD_SANITIZED_COPY)
    if(MQD_SANITIZE)
      set(option MQD_SANITIZE)
    endif()
    foreach(pair asan:libasan8 ubsan:libubsan1)
      string(REPLACE ":" ";" pair ${pair})
      list(GET pair 0 runtime)
      list(GET pair 1 package)
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${runtime}.so
                      OUTPUT_VARIABLE path OUTPUT_STRIP_TRAILING_WHITESPACE)
      get_filename_component(path "${path}" REALPATH)
      if(NOT IS_ABSOLUTE "${path}" OR NOT EXISTS "${path}")
        mqd_requirement_missing(${option} "gcc's ${runtime} runtime" ${package})
      endif()
    endforeach()
  endif()

  if(MQD_FUZZ)
    # Debian 12's clang 14 or Debian 13's clang 19 (tools/install-deps.sh)
    mqd_require_program(MQD_CLANG_C MQD_FUZZ clang-14 clang-14 clang-19 clang)
    mqd_require_program(MQD_CLANG_CXX MQD_FUZZ clang-14 clang++-14 clang++-19 clang++)
    execute_process(COMMAND ${MQD_CLANG_CXX} -print-resource-dir OUTPUT_VARIABLE resource
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    file(GLOB fuzzer "${resource}/lib/linux/libclang_rt.fuzzer-*.a")
    if(NOT fuzzer)
      mqd_requirement_missing(MQD_FUZZ "clang's libFuzzer" libclang-rt-14-dev)
    endif()
  endif()

  foreach(arch IN LISTS MQD_CROSS)
    if(arch STREQUAL "aarch64")
      mqd_require_program(MQD_CROSS_CXX_${arch} MQD_CROSS=${arch} g++-aarch64-linux-gnu
                          aarch64-linux-gnu-g++)
      mqd_require_program(MQD_QEMU_${arch} MQD_CROSS=${arch} qemu-user qemu-aarch64)
    elseif(arch STREQUAL "ppc64el")
      mqd_require_program(MQD_CROSS_CXX_${arch} MQD_CROSS=${arch} g++-powerpc64le-linux-gnu
                          powerpc64le-linux-gnu-g++)
      mqd_require_program(MQD_QEMU_${arch} MQD_CROSS=${arch} qemu-user qemu-ppc64le)
    elseif(arch STREQUAL "s390x")
      mqd_require_program(MQD_CROSS_CXX_${arch} MQD_CROSS=${arch} g++-s390x-linux-gnu
                          s390x-linux-gnu-g++)
      mqd_require_program(MQD_QEMU_${arch} MQD_CROSS=${arch} qemu-user qemu-s390x)
    elseif(arch MATCHES "^i686(-taddr64)?$")
      # (Where this kernel runs no i386 program, the toolchain asks for qemu-i386 itself.)
      mqd_require_program(MQD_CROSS_CXX_i686 MQD_CROSS=${arch} g++-i686-linux-gnu
                          i686-linux-gnu-g++)
    else()
      message(FATAL_ERROR "MQD_CROSS: unknown architecture '${arch}' (known: aarch64 ppc64el "
                          "s390x i686 i686-taddr64)")
    endif()
    if(NOT arch MATCHES "^i686")  # a foreign target's live job, debugged (tests/cross/e2e_cross.py)
      mqd_require_program(MQD_GDB_MULTIARCH MQD_CROSS=${arch} gdb-multiarch gdb-multiarch)
    endif()
  endforeach()
endmacro()

#!/usr/bin/env bash
# packaging-deb: the .deb, made by cpack from this build, installed on this machine for real
# with apt-get, works from its installed paths alone: tools/mpi-demo.sh --installed /usr --check
# runs a live 4-rank Open MPI job, attaches gdb with /usr/share/mqd-proxy/gdb/mqd.py (and its
# package mqd_gdb), loads /usr/lib/<multiarch>/libmqdproxy.so, serves Open MPI's DLL from
# /usr/bin/mqd-proxy-server and checks that the dump shows every pending operation each rank
# posted. The package is purged afterwards, whatever happened, and the test fails if any of its
# files is left.
#
# Usage: deb-smoke.sh BUILD_DIR SOURCE_DIR
#
# Needs root (CI runs as root on a throwaway machine): without it, it fails and says so. It
# refuses to run where mqd-proxy is already installed by someone else, and it takes the dpkg
# lock only through apt-get (waiting for it), so it neither replaces nor removes anything it
# did not install. Other tests use the build tree's files, never /usr's.
#
# The machine has one /usr, so its state is the machine's, not the build's: runs from several
# clones (a developer's run beside CI's) take turns on a lock, and a run killed before its
# clean-up (ctest's timeout, an ended session) leaves a stamp, both in /var/lib/mqd-proxy-tests;
# the next run, from whichever clone, purges what that run installed first.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
if [ "$(id -u)" != 0 ]; then
  fail "packaging-deb installs the .deb with apt-get and must run as root (it does in CI); run it as root, or leave it out with ctest -LE packaging"
fi
state=/var/lib/mqd-proxy-tests  # this machine's, whichever clone runs the test
stamp=$state/deb-smoke.installed
mkdir -p "$state"
# Another run of this test on this machine holds the lock while its package is installed: wait
# for it (its own run is bounded by its ctest timeout). flock keeps the lock, not this script
# (-o): a process the run leaves behind does not hold it.
lock=$state/deb-smoke.lock
if [ -z "${MQD_DEB_SMOKE_LOCKED:-}" ]; then
  status=0
  MQD_DEB_SMOKE_LOCKED=1 flock -o -w 600 -E 75 "$lock" bash "$0" "$@" || status=$?
  [ $status != 75 ] || echo "FAIL: another run of packaging-deb on this machine held $lock for 600 s"
  exit $status
fi
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
package=mqd-proxy
export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -y -q -o DPkg::Lock::Timeout=600)

for tool in apt-get dpkg dpkg-deb dpkg-shlibdeps cpack gdb mpirun lintian; do
  command -v "$tool" > /dev/null || fail "$tool is missing (tools/install-deps.sh installs what this test needs)"
done
[ -x "$build/tests/e2e/pending" ] || fail "$build/tests/e2e/pending (the MPI program of the demo) is not built"
status_of() { dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true; }

purge() {
  "${apt[@]}" purge "$package" > "$work/purge.log" 2>&1 || { cat "$work/purge.log"; return 1; }
  rm -f "$stamp"
}

work=$(mktemp -d /tmp/mqd-packaging-deb.XXXXXX)
installed= passed=
cleanup() {
  local status=$?
  trap - EXIT
  if [ -n "$installed" ]; then
    echo "== apt-get purge $package"
    purge || { echo "FAIL: apt-get purge $package"; status=1; }
    # Every file the package brought must be gone (directories it shared may stay).
    local left=0
    while read -r f; do
      if [ -e "$f" ] && [ ! -d "$f" ]; then echo "FAIL: $f is left after the purge"; left=1; fi
    done < "$work/files"
    if [ -n "$(status_of | grep -v '^not-installed$')" ]; then
      echo "FAIL: dpkg still lists $package"
      left=1
    fi
    if [ $left = 0 ]; then
      echo "ok: purged; none of its $(wc -l < "$work/files") files is left"
    else
      status=1
    fi
  fi
  if [ $status = 0 ] && [ -n "$passed" ] && [ -z "${MQD_KEEP:-}" ]; then
    rm -rf "$work"
  else
    echo "(files kept in $work)"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A run of this test that was killed (its stamp is here) may have left dpkg itself half done (a
# purge killed in man-db's trigger): dpkg finishes that work, then the package it installed is
# purged. Without the stamp, an installed package is someone else's.
if [ -e "$stamp" ]; then
  echo "== finishing what an interrupted run of this test left ($(cat "$stamp"))"
  if [ -n "$(dpkg --audit 2>&1)" ]; then
    dpkg --configure -a > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "dpkg --configure -a"; }
  fi
  case "$(status_of)" in
    ""|not-installed) rm -f "$stamp" ;;
    *) purge || fail "could not purge the $package left by an interrupted run" ;;
  esac
fi
case "$(status_of)" in
  ""|not-installed) ;;
  *) fail "$package is already installed here ($(status_of)), not by this test: it will not replace or remove it" ;;
esac

echo "== cpack -G DEB"
(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/cpack") > "$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
arch=$(dpkg --print-architecture)
debs=("$work"/cpack/*.deb)
[ ${#debs[@]} = 1 ] && [ -f "${debs[0]}" ] || fail "cpack made ${#debs[@]} packages: ${debs[*]}"
deb=${debs[0]}
version=$(dpkg-deb -f "$deb" Version)
[ "$(basename "$deb")" = "${package}_${version}_${arch}.deb" ] ||
  fail "the package is named $(basename "$deb"), not ${package}_${version}_${arch}.deb"
echo "ok: $(basename "$deb")"

# Debian's own checks of the package. Accepted, each for its reason:
#   no-copyright-file       the project has not chosen a licence yet; the package gets
#                           /usr/share/doc/mqd-proxy/copyright when it has
#   arch-dependent-file-in-usr-share
#                           the Open MPI debug-type objects, one per machine under
#                           share/mqd-proxy/ompi-types/<machine>/, where the gdb front end
#                           looks for them next to itself
#   shared-library-lacks-version, package-name-doesnt-match-sonames
#                           libmqdproxy.so is an MQD DLL, which debuggers dlopen() by path,
#                           not a library programs link by soname
#   maintainer-script-empty postinst and postrm do nothing on purpose: without them CPack
#                           writes ones that call ldconfig, where Debian wants the ldconfig
#                           trigger the package has (packaging/deb/triggers)
echo "== lintian $(basename "$deb")"
accepted=no-copyright-file,arch-dependent-file-in-usr-share,shared-library-lacks-version
accepted+=,package-name-doesnt-match-sonames,maintainer-script-empty
lintian --suppress-tags "$accepted" --fail-on error,warning --tag-display-limit 0 "$deb" \
  > "$work/lintian.log" 2>&1 || { cat "$work/lintian.log"; fail "lintian found errors or warnings"; }
echo "ok: lintian: no error or warning but the accepted ($accepted)"
dpkg-deb -f "$deb" Package Version Architecture Maintainer Depends Recommends | sed 's/^/   /'
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libstdc++6 libcapnp libuv1 libzstd1; do  # kj comes with libcapnp
  [[ "$depends" == *"$lib"* ]] || fail "Depends (from dpkg-shlibdeps) lacks $lib: $depends"
done
recommends=$(dpkg-deb -f "$deb" Recommends)
[[ "$recommends" == *gdb* && "$recommends" == *python3* ]] || fail "Recommends is \"$recommends\""
dpkg-deb -e "$deb" "$work/control"
grep -qx /etc/default/mqd-proxy-server "$work/control/conffiles" || fail "/etc/default/mqd-proxy-server is not a conffile"
# Everything under /usr, but the settings (/etc/default) and the units (systemd's directory).
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' | grep -v '^$' > "$work/contents"
outside=$(grep -v -E '^(/usr|/usr/.*|/etc|/etc/default|/etc/default/mqd-proxy-server|/lib|/lib/systemd|/lib/systemd/system|/lib/systemd/system/mqd-proxy-server.service|/lib/systemd/system/mqd-proxy-server.socket)$' "$work/contents" || true)
[ -z "$outside" ] || fail "the package installs outside /usr: $outside"
dpkg-deb -c "$deb" | grep -v '^d' | awk '{print $6}' | sed 's|^\./|/|' > "$work/files"
echo "ok: $(wc -l < "$work/files") files, under /usr but its settings and unit; dependencies from dpkg-shlibdeps"

echo "== apt-get install $deb"
echo "$build, $(date -u +%FT%TZ)" > "$stamp"
installed=1
"${apt[@]}" install "$deb" > "$work/install.log" 2>&1 || { cat "$work/install.log"; fail "apt-get install"; }
[ "$(status_of)" = installed ] || fail "dpkg says $package is $(status_of)"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
unit=$(grep -E '/systemd/system/mqd-proxy-server\.service$' "$work/files")
for f in /usr/bin/mqd-proxy-server /usr/bin/mqd-proxy "/usr/lib/$multiarch/libmqdproxy.so" \
         /usr/share/mqd-proxy/gdb/mqd.py /usr/include/mqd-proxy/mqs_interface.h \
         /usr/include/mqd-proxy/mqd_proxy.h "/usr/lib/$multiarch/cmake/MqdProxy/MqdProxyConfig.cmake" \
         /etc/default/mqd-proxy-server "$unit" "${unit%.service}.socket" \
         /usr/libexec/mqd-proxy/mqd-pmix-procs; do
  [ -e "$f" ] || fail "$f is not installed"
done
# The gdb front end is mqd.py and its package mqd_gdb (frontends/CMakeLists.txt), as staged in
# the build.
for f in $(cd "$build/share/mqd-proxy/gdb" && find . -name '*.py' | sed 's|^\./||'); do
  [ -e "/usr/share/mqd-proxy/gdb/$f" ] || fail "/usr/share/mqd-proxy/gdb/$f (the gdb front end) is not installed"
done
# So is the deadlock analysis (mqd graph, mqd-proxy graph), and the installed command runs it.
for f in $(cd "$build/share/mqd-proxy/analysis" && find . -name '*.py' | sed 's|^\./||'); do
  [ -e "/usr/share/mqd-proxy/analysis/$f" ] || fail "/usr/share/mqd-proxy/analysis/$f (the deadlock analysis) is not installed"
done
/usr/bin/mqd-proxy graph "$source/tests/unit/data/replay-dump.json" | grep -q '^NO DEADLOCK FOUND' ||
  fail "/usr/bin/mqd-proxy graph does not run the installed analysis"
/usr/bin/mqd-proxy-server --version | grep -x "mqd-proxy-server $version" >/dev/null || fail "/usr/bin/mqd-proxy-server --version"
if grep -q '/man1/' "$work/files"; then
  man -w mqd-proxy-server mqd-proxy > /dev/null || fail "man cannot find the installed man pages"
fi
grep -qx 'ExecStart=/usr/bin/mqd-proxy-server .*' "$unit" || fail "$unit does not run /usr/bin/mqd-proxy-server"
grep -qx 'EnvironmentFile=/etc/default/mqd-proxy-server' "$unit" || fail "$unit does not read /etc/default/mqd-proxy-server"
if command -v systemd-analyze > /dev/null; then
  for u in "$unit" "${unit%.service}.socket"; do
    systemd-analyze verify "$u" || fail "systemd-analyze verify $u"
    echo "ok: systemd-analyze verify $u"
  done
fi

# The service's own command line, with the packaged settings, starts a server that serves the
# DLL they name. systemd is not running here: the ExecStart line is expanded the way systemd
# does (${VAR} one word, $VAR split into words), with a private listener and state directory.
(
  set -a
  . /etc/default/mqd-proxy-server
  set +a
  MQD_LISTEN=unix:$work/service.sock
  exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
  exec_start=${exec_start//\/var\/lib\/mqd-proxy-server/$work/service-state}
  eval "set -- $exec_start"
  exec "$@" --ready-file "$work/service.ready" --log-file "$work/service.log"
) &
service_pid=$!
# Ready within the slack of a loaded machine (60 s); the ready file, or the end, stops the wait.
deadline=$((SECONDS + 60))
while [ $SECONDS -lt $deadline ]; do
  [ -s "$work/service.ready" ] && break
  kill -0 $service_pid 2>/dev/null || break
  sleep 0.05
done
[ -s "$work/service.ready" ] || { cat "$work/service.log" 2>/dev/null; fail "the unit's command line with the packaged settings did not start a server"; }
kill -TERM $service_pid
wait $service_pid || fail "the server of the unit's command line exited with $? on SIGTERM"
grep -q 'listening on' "$work/service.log" || fail "no 'listening on' in the service's log"
echo "ok: the unit's command line with /etc/default/mqd-proxy-server serves $(sed -n 's/^MQD_DLLS=.*--dll \([^ "]*\).*/\1/p' /etc/default/mqd-proxy-server)"

echo "== tools/mpi-demo.sh --installed /usr --check (the MPI program from $build)"
"$source/tools/mpi-demo.sh" --installed /usr --check "$build" 8 > "$work/demo.log" 2>&1 ||
  { cat "$work/demo.log"; fail "the demo from the installed paths"; }
grep '^== ' "$work/demo.log"
# gdb's Python wrote no bytecode next to the installed front end: nothing a purge would leave.
pycache=$(find /usr/share/mqd-proxy -name __pycache__)
[ -z "$pycache" ] || fail "the front end left $pycache"
passed=1

#!/usr/bin/env bash
# make-root.sh SUITE DIR: a Debian root of another release (SUITE: trixie, Debian 13) in DIR,
# made from Debian's packages by mmdebstrap, with what `tools/install-deps.sh --release-root`
# installs there: what the README's main command needs (build, gdb, gdbserver, Open MPI, the
# unit, transparency and e2e tests), the packaging tests' tools, and Slurm for the simulated
# cluster. tests/debian13/ builds and tests the project inside it (enter.sh runs a command
# there).
#
# Re-running is cheap: the root is made once; install-deps.sh runs in it again only when it
# changed (DIR/.mqd-root records the suite and the script's hash, written last). Runs for the
# same DIR wait for each other (flock on DIR.lock, at most 30 minutes). The mirror is this
# machine's (tools/apt-mirror.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
suite=${1:?usage: make-root.sh SUITE DIR}
dir=${2:?usage: make-root.sh SUITE DIR}
case "$suite" in trixie) ;; *) echo "make-root: knows trixie (Debian 13), not $suite" >&2; exit 2 ;; esac
command -v mmdebstrap >/dev/null || {
  echo "make-root: needs mmdebstrap (Debian package mmdebstrap, which tools/install-deps.sh --test installs)" >&2
  exit 1
}
mkdir -p "$(dirname "$dir")"
dir=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")
exec 9>"$dir.lock"
flock -w 1800 9 || { echo "make-root: $dir is being made by another run for over 30 minutes" >&2; exit 1; }
deps=$here/../install-deps.sh
stamp=$dir/.mqd-root
deps_mode=--release-root
want="$suite $(sha256sum < "$deps" | cut -c1-16) $deps_mode"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "make-root: $dir is up to date ($suite)" >&2
  exit 0
fi
if [ ! -f "$stamp" ] || [ "$(cut -d' ' -f1 "$stamp")" != "$suite" ]; then
  # Nothing to keep: a root stopped half-way, or of another suite, is made again.
  rm -rf "$dir"
  mirror=$("$here/../apt-mirror.sh")
  echo "make-root: making a $suite root in $dir from $mirror" >&2
  mmdebstrap --quiet --variant=apt "$suite" "$dir" "$mirror" >&2
fi
rm -f "$stamp"  # written again last: a run stopped half-way leaves none
"$here/enter.sh" "$dir" --bind "$(dirname "$deps"):/mnt/mqd-tools:ro" \
  bash /mnt/mqd-tools/install-deps.sh "$deps_mode" >&2
echo "$want" > "$stamp"
echo "make-root: $dir is ready ($suite)" >&2

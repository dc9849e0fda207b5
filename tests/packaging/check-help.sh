#!/usr/bin/env bash
# packaging-help-*: a program's --help is complete, so that its man page (made from it by
# help2man, packaging/man/) is too. Every option the given sources compare an argument with
# ("--name" literals), every command they dispatch on (command == "name") and every
# MQD_PROXY_* variable they read must appear in `PROGRAM --help`, which must exit 0.
#
# Usage: check-help.sh PROGRAM SOURCE...
set -euo pipefail
program=$1
shift
help=$("$program" --help) || { echo "FAIL: $program --help exited with $?"; exit 1; }
[ -n "$help" ] || { echo "FAIL: $program --help printed nothing on stdout"; exit 1; }

names=$(cat "$@" | grep -ohE '"--[a-z][a-z0-9-]*"|"MQD_PROXY_[A-Z_]+"|command [!=]= "[a-z-]+"' |
        grep -oE '"[^"]+"' | tr -d '"' | sort -u)
missing=()
count=0
for name in $names; do
  count=$((count + 1))
  grep -qE -- "(^|[^A-Za-z0-9_-])${name}([^A-Za-z0-9_-]|$)" <<< "$help" || missing+=("$name")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "FAIL: $(basename "$program") --help does not mention: ${missing[*]}"
  exit 1
fi
echo "ok: $(basename "$program") --help mentions all $count options, commands and variables of" $(for f in "$@"; do basename "$f"; done)

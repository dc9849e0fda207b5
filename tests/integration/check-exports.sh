#!/usr/bin/env bash
# The shim must export exactly the MQD entry points: every mqs_* function that
# schema/mqs_interface.h declares, no more (checked with nm -D), no less.
set -euo pipefail
shim=$1 map=$2 header=$3
exported=$(nm -D --defined-only "$shim" | awk '{print $3}' | sort)
declared=$(grep -oE '^extern [a-z_ *]+ \**(mqs_[a-z_]+)\(' "$header" | grep -oE 'mqs_[a-z_]+' | sort -u)
if [ "$exported" != "$declared" ]; then
  echo "FAIL: exported symbols differ from the MQD entry points of $header"
  diff <(echo "$declared") <(echo "$exported") || true
  exit 1
fi
# (the generated script may list several names on one line)
listed=$(grep -oE 'mqs_[a-z_]+;' "$map" | tr -d ';' | sort)
if [ "$listed" != "$declared" ]; then
  echo "FAIL: $map does not list exactly the MQD entry points"
  diff <(echo "$declared") <(echo "$listed") || true
  exit 1
fi
echo "ok: $(echo "$exported" | wc -l) MQD entry points exported, nothing else"

#!/bin/bash
# lintian.sh DEBDIR_FILE: lintian of the .changes of both packages; any error (E:) fails.
# Warnings and infos are printed (the report is the log of this test).
set -euo pipefail
dir=$(cat "$1")
changes=$(ls "$dir"/*.changes)
# lintian runs as root here (root-only machine); that is its only complaint about the environment
lintian --fail-on error --display-info "$changes" 2>&1 | grep -v 'running with root privileges' | tee "$dir/lintian.log" || true
lintian --fail-on error "$changes" >/dev/null 2>&1 || { echo "FAIL: lintian reports errors"; exit 1; }
echo "PASS: lintian: $(grep -c '^E:' "$dir/lintian.log" || true) errors, $(grep -c '^W:' "$dir/lintian.log" || true) warnings, $(grep -c '^I:' "$dir/lintian.log" || true) infos"

#!/usr/bin/env bash
# `npm test` [-- bundled test files]: the type-check, the layout check and the AVA tests. The type-check is one
# single-threaded process of about half a minute; it runs beside the tests instead of before them,
# so its core is not the only one busy while the suite waits. Its verdict counts all the same:
# the run fails when it reports an error, and its output is printed after the tests'.
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=node_modules/.bin
typecheck_log=$(mktemp)
# The bundles are rebuilt on every run; none stay behind to be mistaken for sources.
trap 'rm -f "$typecheck_log"; find test examples -name "*.test.bundle.mjs*" -delete' EXIT

"$bin/tsc" --noEmit >"$typecheck_log" 2>&1 &
typecheck=$!

"$bin/tsx" tools/scripts/check-layout.ts && "$bin/tsx" tools/scripts/bundle-tests.ts &&
  "$bin/ava" --config ava.bundled.config.js "$@"
tests=$?

wait "$typecheck"
typed=$?
if [ "$typed" -ne 0 ]; then
  echo "type-check (tsc --noEmit) failed:"
  cat "$typecheck_log"
else
  echo "type-check (tsc --noEmit): no errors"
fi
[ "$tests" -eq 0 ] && [ "$typed" -eq 0 ]

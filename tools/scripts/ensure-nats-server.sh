#!/usr/bin/env bash
# Makes sure nats-server is on PATH before the tests or the demo run. On a fresh Debian machine,
# as root, it installs Debian's package; otherwise it says plainly what is missing and fails.
set -euo pipefail
if command -v "${NATS_SERVER_BIN:-nats-server}" >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "nats-server is missing: installing Debian's nats-server package" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq nats-server >/dev/null
  command -v nats-server >/dev/null 2>&1 && exit 0
fi
echo "nats-server is not installed and could not be installed here." \
  "Install it (Debian/Ubuntu: sudo apt-get install -y nats-server) or set NATS_SERVER_BIN." >&2
exit 1

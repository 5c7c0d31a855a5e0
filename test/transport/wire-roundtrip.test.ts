import test from "ava";
import { register } from "tsx/esm/api";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { wireSamples } from "./wire-samples.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const SKIP = new Set(["node_modules", "test", "bench", ".git", ".ci", "dist"]);

/** Every non-test source file that calls defineMessage, so kinds defined in any folder get registered here. */
async function modulesDefiningMessages(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await modulesDefiningMessages(path)));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) {
      const text = await readFile(path, "utf8");
      if (/\bdefineMessage\s*\(/.test(text) && !path.endsWith(join("wire", "codec.ts"))) out.push(path);
    }
  }
  return out;
}

/** The wire registry, loaded by path with the modules that register into it: one module graph. */
let wire: typeof import("../../transport/protocol/wire/index.ts");

test.before(async () => {
  // `npm test` runs this file bundled, without tsx: the modules found on disk are TypeScript. The
  // registry comes by path too, so a bundle of this file does not carry a copy of its own that
  // the modules below would never register into.
  register();
  wire = (await import(pathToFileURL(join(root, "transport", "protocol", "wire", "index.ts")).href)) as typeof wire;
  for (const path of await modulesDefiningMessages(root)) await import(pathToFileURL(path).href);
});

test("the registry holds the data-path kinds unit@1, credit@2 (credit windows) and credit-request@1", (t) => {
  const kinds = wire.registeredKinds().map((k) => `${k.kind}@${k.version}`);
  for (const expected of ["unit@1", "credit@2", "credit-request@1"]) t.true(kinds.includes(expected), expected);
});

test("every registered kind has a sample and round-trips through encode/decode unchanged", (t) => {
  const kinds = wire.registeredKinds();
  t.true(kinds.length > 0);
  for (const { kind, version } of kinds) {
    const key = `${kind}@${version}`;
    const sample = wireSamples[key];
    if (sample === undefined) {
      t.fail(`kind ${key} is registered but test/transport/wire-samples.ts has no sample for it`);
      continue;
    }
    const spec = wire.specFor(kind, version);
    if (spec === undefined) {
      t.fail(`specFor(${key}) is undefined`);
      continue;
    }
    const bytes = wire.encodeMessage(spec, sample);
    t.deepEqual(wire.decodeMessage(spec, bytes), sample, `${key} via decodeMessage`);
    t.deepEqual(wire.decodeAny(bytes), { kind, version, body: sample }, `${key} via decodeAny`);
  }
});

test("no sample is left for a kind that is not registered (stale samples are removed)", (t) => {
  const registered = new Set(wire.registeredKinds().map((k) => `${k.kind}@${k.version}`));
  const stale = Object.keys(wireSamples).filter((key) => !registered.has(key));
  t.deepEqual(stale, [], `samples without a registered kind: ${stale.join(", ")} (scanned from ${relative(process.cwd(), root) || "."})`);
});

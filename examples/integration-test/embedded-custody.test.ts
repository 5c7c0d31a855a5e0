/**
 * An integration test the way a project embedding custody would write one, with this repository's
 * test kit (`test/kit/`). The kit starts real nats-servers on free loopback ports, two regions
 * joined by a gateway, and stops them after the file whether tests passed or not. The program under
 * test is examples/embedding/embedded-custody.ts: three holders and a writer in one process.
 *
 * Run it alone: `npx ava examples/integration-test/embedded-custody.test.ts`.
 */
import anyTest, { type TestFn } from "ava";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { repoRoot, withSupercluster, type SuperclusterTestContext } from "../../test/kit/index.ts";
import { blockOf, startEmbeddedCustody, type EmbeddedCustody } from "../embedding/embedded-custody.ts";

const test = anyTest as TestFn<SuperclusterTestContext>;
withSupercluster(test, { regions: ["us-east", "us-west"], jetstream: false });

const regionUrls = (t: { context: SuperclusterTestContext }) =>
  Object.fromEntries(Object.entries(t.context.supercluster.regions).map(([name, r]) => [name, r.url]));

/** Starts the embedded network in a temp dir; the test's teardown stops it and deletes the dir. */
async function embedded(t: { context: SuperclusterTestContext; teardown(fn: () => Promise<void>): void }) {
  const dir = await mkdtemp(join(tmpdir(), "example-it-"));
  const custody = await startEmbeddedCustody(regionUrls(t), dir);
  t.teardown(async () => {
    await custody.stop();
    await rm(dir, { recursive: true, force: true });
  });
  return custody;
}

async function writeMany(custody: EmbeddedCustody, from: number, count: number): Promise<number> {
  let last = 0;
  for (let i = from; i < from + count; i++) last = (await custody.writer.write(i % 256, blockOf(i))).lsn;
  return last;
}

const retained = (custody: EmbeddedCustody, holder: string) =>
  custody.holders[holder]!.lane("vol-embedded", "l0")?.retained.toString();

test.serial("sync('az-loss') resolves once both holders outside the writer's AZ hold every write", async (t) => {
  const custody = await embedded(t);
  const last = await writeMany(custody, 0, 150);
  const synced = await custody.writer.sync("az-loss", 30_000);
  t.true(synced.heads["l0"]! >= 150, `heads ${JSON.stringify(synced.heads)}`);
  t.is(custody.writer.protectedThrough("az-loss", "l0"), 150);
  t.is(last, synced.durableLsn);
  for (const h of ["h-az2", "h-west"]) t.is(retained(custody, h), "1-150", `${h} retains every write`);
});

test.serial("with the writer's own AZ holder gone, the other two still make writes az-loss protected", async (t) => {
  const custody = await embedded(t);
  await writeMany(custody, 0, 50);
  await custody.writer.sync("az-loss", 30_000);
  await custody.stopHolder("h-az1");
  await writeMany(custody, 50, 50);
  await custody.writer.sync("az-loss", 30_000);
  t.is(custody.writer.protectedThrough("az-loss", "l0"), 100);
  for (const h of ["h-az2", "h-west"]) t.is(retained(custody, h), "1-100");
});

test.serial("with only one holder outside the writer's AZ left, az-loss is never claimed", async (t) => {
  const custody = await embedded(t);
  await writeMany(custody, 0, 20);
  await custody.writer.sync("az-loss", 30_000);
  await custody.stopHolder("h-west");
  await writeMany(custody, 20, 20);
  const err = await t.throwsAsync(custody.writer.sync("az-loss", 1_500));
  t.is((err as { code?: string }).code, "protection_timeout");
  t.is(custody.writer.protectedThrough("az-loss", "l0"), 20, "protection stops where two copies stopped");
  t.is(retained(custody, "h-az2"), "1-40", "the remaining holder still has every write");
});

test.serial("the example runs as a program: `--nats region=URL,...` prints what each holder retains", async (t) => {
  const urls = Object.entries(regionUrls(t))
    .map(([region, url]) => `${region}=${url}`)
    .join(",");
  const run = promisify(execFile);
  const { stdout } = await run(
    join(repoRoot(), "node_modules/.bin/tsx"),
    ["examples/embedding/embedded-custody.ts", "--nats", urls, "--writes", "64"],
    { cwd: repoRoot(), timeout: 60_000 },
  );
  t.regex(stdout, /^64 writes; az-loss protects through sequence 64$/m);
  for (const h of ["h-az1", "h-az2", "h-west"]) t.regex(stdout, new RegExp(`${h} .* retains 1-64`));
});

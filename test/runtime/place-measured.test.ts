/**
 * `custody place --measured` against a real nats-server: a writer-side prober measures its edge to
 * a holder through a link shaped to 100 ms, and placement uses (and names) the measured values.
 */
import anyTest, { type TestFn } from "ava";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { systemClock } from "../../core/index.ts";
import { shapedByLinks } from "../../actors/runtime/role-links.ts";
import { RouteProber } from "../../actors/runtime/route-prober.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { custodyCommand } from "../kit/custody-command.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const run = promisify(execFile);
/** `custody <args>` as its own process (the bundled CLI; see test/kit/custody-command.ts). */
const custody = (args: string[]) => {
  const c = custodyCommand(args);
  return run(c.command, c.args, { timeout: 60_000 });
};
const dir = mkdtempSync(join(tmpdir(), "custody-place-measured-"));
test.after.always(() => rmSync(dir, { recursive: true, force: true }));

const site = (id: string, region: string) => ({ id, region, az: `${region}-a`, host: `host-${id}`, deps: [] });
const store = (id: string, s: string) => ({ id, site: s, residency: "disk", holdsBase: true, retentionMs: 0, sendBytesPerSec: 1e9, drainBytesPerSec: 1e9, monthlyUsd: 0 });

/** Two equally priced stores: `h-b` is configured 2.5 ms away, `h-c` 4 ms; one must survive the writer's region. */
const candidates = {
  source: { site: "s-a", sendBytesPerSec: 1e9 },
  streamBytesPerSec: 100_000,
  sites: [site("s-a", "east"), site("s-b", "west"), site("s-c", "north")],
  candidates: [store("h-b", "s-b"), store("h-c", "s-c")],
  edges: [
    { from: "s-a", to: "s-b", rttMs: 5, jitterMs: 0, bandwidthBytesPerSec: 125_000_000 },
    { from: "s-a", to: "s-c", rttMs: 8, jitterMs: 0, bandwidthBytesPerSec: 125_000_000 },
  ],
  contract: { maxHolders: 1, scenarios: [{ name: "east lost", losses: [{ domain: "region:east", kind: "site_destruction" }], maxLagMs: 10_000 }] },
};

test("custody place --measured uses a fresh measured route in place of the configured one, names it measured with its age, and chooses accordingly", async (t) => {
  const holderBus = await NatsTransport.connect({ servers: t.context.nats.url, name: "h-b", maxReconnectAttempts: 0 });
  t.context.defer(() => holderBus.close());
  const holder = new RouteProber({ self: "h-b", site: "s-b", peers: {}, intervalMs: 3_600_000, budgetBytesPerInterval: 0 }, { transport: holderBus, clock: systemClock });
  holder.endpoint.start();
  const writerBus = await NatsTransport.connect({ servers: t.context.nats.url, name: "w1", maxReconnectAttempts: 0 });
  t.context.defer(() => writerBus.close());
  const sending = shapedByLinks(writerBus, { site: "s-a", peers: { "h-b": { site: "s-b", latencyMs: 100, bandwidthMBps: 1 } } });
  const prober = new RouteProber({ self: "w1", site: "s-a", peers: { "h-b": { site: "s-b" } }, intervalMs: 300, budgetBytesPerInterval: 50_000, pings: 2, frameBytes: 8192 }, { transport: sending, clock: systemClock });
  await holderBus.flush();
  prober.start();
  t.teardown(() => {
    prober.stop();
    holder.stop();
  });
  const file = join(dir, "candidates.json");
  writeFileSync(file, JSON.stringify(candidates));

  const configured = await custody(["place", file, "--json"]);
  t.deepEqual(JSON.parse(configured.stdout.trim().split("\n").at(-1)!).chosen.holders, ["h-b"], "configured: the nearer store");

  const m = await custody(["place", file, "--measured", "--server", t.context.nats.url, "--listen-ms", "3000", "--json"]);
  const j = JSON.parse(m.stdout.trim().split("\n").at(-1)!);
  t.like(j.edgeSources[0], { from: "s-a", to: "s-b", source: "measured", rtt: "measured" });
  t.like(j.edgeSources[1], { from: "s-a", to: "s-c", source: "configured", ageMs: null });
  t.deepEqual(j.chosen.holders, ["h-c"], "measured: the link to h-b is slower than configured");

  const text = await custody(["place", file, "--measured", "--server", t.context.nats.url, "--listen-ms", "3000"]);
  const row = text.stdout.split("\n").find((l) => l.startsWith("s-a-s-b"))!;
  t.log(row);
  t.regex(row, /measured \(rtt measured, bandwidth (measured|configured)\)\s+\d+\.\ds$/);
  t.true(Number(/^s-a-s-b\s+([\d.]+)ms/.exec(row)![1]) >= 90, "the shaped 100 ms shows, not the configured 5 ms");
  t.regex(text.stdout.split("\n").find((l) => l.startsWith("s-a-s-c"))!, /configured\s+-$/);
});

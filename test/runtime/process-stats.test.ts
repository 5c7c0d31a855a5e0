import anyTest, { type TestFn } from "ava";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { gatherProcessStats, serveProcessStats } from "../../actors/runtime/process-stats.ts";
import { psSubject } from "../../transport/protocol/subjects.ts";
import { custodyCommand } from "../kit/custody-command.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);
const run = promisify(execFile);

test.serial("every serving process answers custody.v1.ps.all; a role filter reaches only that role; a garbage reply is counted, not returned", async (t) => {
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "ps-a" });
  const b = await NatsTransport.connect({ servers: t.context.nats.url, name: "ps-b" });
  const asker = await NatsTransport.connect({ servers: t.context.nats.url, name: "ps-asker" });
  t.teardown(() => Promise.all([a.close(), b.close(), asker.close()]));
  let retained = 10;
  serveProcessStats(a, "holder", () => ({ id: "h-1", incarnation: 3, counters: { units: 7 }, figures: { retainedBytes: retained } }));
  serveProcessStats(b, "writer", () => ({ id: "vol-1", counters: {}, figures: { custodyLagSeqs: 2 } }));
  // A hostile process answers with garbage.
  b.subscribe(psSubject("all"), (m) => b.respond(m, new TextEncoder().encode("{not json")));
  await Promise.all([a.flush(), b.flush()]);

  const all = await gatherProcessStats(asker.connection, { waitMs: 500 });
  t.deepEqual(all.stats.map((s) => `${s.role}/${s.id}`), ["holder/h-1", "writer/vol-1"]);
  t.is(all.rejected, 1);
  const holder = all.stats[0]!;
  t.is(holder.incarnation, 3);
  t.is(holder.figures["retainedBytes"], 10);
  t.true(holder.rssBytes > 0);

  retained = 99;
  const holders = await gatherProcessStats(asker.connection, { role: "holder", waitMs: 500 });
  t.deepEqual(holders.stats.map((s) => s.id), ["h-1"]);
  t.is(holders.stats[0]!.figures["retainedBytes"], 99);
});

test.serial("custody ps lists every answering process with its role, incarnation and key figures, and --json gives them whole", async (t) => {
  const a = await NatsTransport.connect({ servers: t.context.nats.url, name: "ps-cli-a" });
  const b = await NatsTransport.connect({ servers: t.context.nats.url, name: "ps-cli-b" });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  serveProcessStats(a, "holder", () => ({ id: "h-7", incarnation: 4, counters: { units: 1 }, figures: { retainedRamBytes: 4096, retainedDiskBytes: 0 } }));
  serveProcessStats(b, "controller", () => ({ id: "ctl-1", counters: {}, figures: { evaluations: 12, evalMsP99: 3.5 } }));
  await Promise.all([a.flush(), b.flush()]);
  const cli = (args: string[]) => {
    const c = custodyCommand(["ps", "--server", t.context.nats.url, "--wait", "500", ...args]);
    return run(c.command, c.args, { cwd: process.cwd() });
  };
  const table = (await cli([])).stdout;
  t.regex(table, /^2 processes answered, 0 absent, 0 fenced/m);
  // One table per role, the figures rounded under headers that carry their units.
  t.regex(table, /^holder\nid\s+state\s+inc\s+pid\s+up s\s+rss MiB\s+heap MiB\s+loop p99 ms\s+RAM MiB\s+disk MiB\s+note$/m);
  t.regex(table, /^h-7\s+running\s+4\s+\d+\s.*\s0\.0039\s+0$/m);
  t.regex(table, /^ctl-1\s+running\s.*\s12\s+3\.5$/m);
  const json = JSON.parse((await cli(["--role", "holder", "--json"])).stdout.trim()) as { processes: { id: string; figures: Record<string, number> }[]; rejected: number };
  t.deepEqual(json.processes.map((p) => p.id), ["h-7"]);
  t.is(json.processes[0]!.figures["retainedRamBytes"], 4096);
  const bad = await cli(["--role", "a.b"]).catch((e: { code: number; stderr: string }) => e);
  t.is((bad as { code: number }).code, 1);
  t.regex((bad as { stderr: string }).stderr, /invalid_subject/);
});

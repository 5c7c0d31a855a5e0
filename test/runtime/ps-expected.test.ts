/**
 * `custody ps` beside a deployment: the roles `custody init` planned (roles.json beside the
 * operator config) and the holders the control log admitted (bootstrap.json names its region) are
 * expected; one that does not answer is listed ABSENT, a process the log has replaced is FENCED,
 * and figures are rounded with their units in the headers (--json keeps them raw).
 */
import anyTest, { type TestFn } from "ava";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCliCaptured } from "../../cli/program.ts";
import { systemClock } from "../../core/clock.ts";
import { commitControlEvent } from "../../custody/control-commit.ts";
import type { ControlEventBody } from "../../custody/control-event.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { generateHolderKeyPair } from "../../custody/signing.ts";
import { serveProcessStats } from "../../actors/runtime/process-stats.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { operatorCommit } from "../kit/operator-commit.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

const admit = (holderId: string, incarnation: number): ControlEventBody => ({ type: "admit_holder", holderId, incarnation, publicKey: generateHolderKeyPair().publicKey, failureDomain: `east/az1/${holderId}` });
// A signed log, as custody init sets one up: bootstrap.json names the operator's public key.
const operator = generateHolderKeyPair();

test.serial("ps lists a planned role that does not answer and a holder the control log admitted as ABSENT, a holder the log replaced as FENCED, with rounded figures", async (t) => {
  const url = t.context.nats.url;
  const dir = mkdtempSync(join(tmpdir(), "custody-ps-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, "operator"));
  writeFileSync(join(dir, "operator", "nats.json"), JSON.stringify({ servers: url }));
  const role = (r: string, id: string) => ({ instance: `${r}-${id}`, role: r, region: "east", config: join(dir, "roles", `${r}-${id}`, "config.json"), dir: join(dir, "roles", `${r}-${id}`) });
  writeFileSync(join(dir, "roles.json"), JSON.stringify({ roles: [role("holder", "h-1"), role("holder", "h-2"), role("controller", "ctl-1")], natsServers: [] }));
  writeFileSync(join(dir, "bootstrap.json"), JSON.stringify({ controlRegion: "ps-east", operatorId: "operator", operatorPublicKey: Buffer.from(operator.publicKey).toString("hex") }));

  const a = await NatsTransport.connect({ servers: url, name: "ps-h1" });
  const b = await NatsTransport.connect({ servers: url, name: "ps-ctl" });
  t.teardown(() => Promise.all([a.close(), b.close()]));
  const { log } = await initJetStreamControlLog(a.connection, { region: "ps-east" });
  const signed = (body: ControlEventBody) => commitControlEvent(log, new ControlLogFollower(log), { controller: "operator", clock: systemClock, signer: { id: "operator", privateKey: operator.privateKey } }, () => body);
  await signed(admit("h-1", 1));
  await signed(admit("h-1", 2)); // a newer incarnation of h-1 was admitted: the one below is replaced
  await signed(admit("h-3", 1)); // admitted after init: not in roles.json, still expected
  await operatorCommit(log, admit("h-rogue", 1)); // unsigned: a reader that trusts the operator's key skips it
  serveProcessStats(a, "holder", () => ({ id: "h-1", incarnation: 1, counters: {}, figures: { retainedRamBytes: 3 * 2 ** 20 + 2 ** 19, retainedDiskBytes: 0 } }));
  await serveProcessStats(b, "controller", () => ({ id: "ctl-1", counters: {}, figures: { evaluations: 12, evalMsP99: 51.098595999999816 } })).registered;

  const args = ["ps", "--operator-config", join(dir, "operator", "nats.json"), "--wait", "700"];
  const text = await runCliCaptured(args);
  t.is(text.code, 0, text.stderr);
  t.regex(text.stdout, /^2 processes answered of 4 expected, 2 absent, 1 fenced \(deployment .*, control log ps-east\)$/m);
  t.regex(text.stdout, /^h-1\s+FENCED\s+1\s+\d+\s.*\s3\.5\s+0\s+incarnation 2 replaced it$/m);
  t.regex(text.stdout, /^h-2\s+ABSENT\s+no answer; in roles\.json, region east$/m);
  t.regex(text.stdout, /^h-3\s+ABSENT\s+1\s+no answer; admitted in the control log \(incarnation 1\)$/m);
  t.regex(text.stdout, /^id\s+state\s+inc\s+pid\s+up s\s+rss MiB\s+heap MiB\s+loop p99 ms\s+evals\s+eval p99 ms\s+note$/m);
  t.regex(text.stdout, /^ctl-1\s+running\s.*\s12\s+51\.1$/m);
  t.notRegex(text.stdout, /51\.09/);
  t.notRegex(text.stdout, /h-rogue/);

  const json = JSON.parse((await runCliCaptured([...args, "--json"])).stdout.trim()) as { processes: { id: string; figures: Record<string, number> }[]; absent: { id: string }[]; fenced: { id: string }[] };
  t.is(json.processes.find((p) => p.id === "ctl-1")!.figures["evalMsP99"], 51.098595999999816);
  t.deepEqual(json.absent.map((e) => e.id), ["h-2", "h-3"]);
  t.deepEqual(json.fenced.map((e) => e.id), ["h-1"]);
});

/**
 * `custody init`: a deployment file becomes one `custody run` config per role instance (each
 * accepted by its role's strict schema), keys with mode 0600 where only writers and base builders
 * get a volume's data key, one nats-server config per region with gateways to the others, and the
 * control-log bootstrap. A bad deployment is refused naming the key, and nothing is written.
 */
import test from "ava";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { planDeployment, type KeySource } from "../../policies/deploy/deployment-plan.ts";
import { parseDeployment } from "../../policies/deploy/deployment-check.ts";
import { parseBootstrap } from "../../policies/deploy/bootstrap-file.ts";
import { baseBuilderRoleSchema, controllerRoleSchema, holderRoleSchema, readRoleConfig, writerRoleSchema } from "../../actors/runtime/role-config.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";
import { loopbackDeployment } from "../kit/index.ts";
import { readNkeySeed } from "../../transport/security/nkey-seed.ts";
import { custodyCli } from "../kit/custody-cli.ts";
import { creditSubject, receiptSubject, unitSubject } from "../../transport/protocol/subjects.ts";

const custody = custodyCli;
const failed = (p: Promise<unknown>) => p.then(() => ({ code: 0, stderr: "" }), (e: { code: number; stderr: string }) => e);

async function deploymentFile(mutate: (d: Record<string, any>) => void = () => undefined): Promise<{ dir: string; file: string }> {
  const dir = tempDir("custody-init-");
  const d = await loopbackDeployment(dir, { metrics: true });
  mutate(d);
  const file = join(dir, "deployment.json");
  writeFileSync(file, JSON.stringify(d));
  return { dir, file };
}

const schemas = { holder: holderRoleSchema, writer: writerRoleSchema, controller: controllerRoleSchema, "base-builder": baseBuilderRoleSchema } as const;

test("custody init writes a config per role instance that its role accepts, keys with mode 0600, and the data key only to writers and base builders", async (t) => {
  const { dir, file } = await deploymentFile();
  const out = join(dir, "out");
  const json = JSON.parse((await custody(["init", file, "--out", out, "--json"])).stdout.trim()) as { roles: { instance: string; role: keyof typeof schemas; config: string; dir: string }[] };
  t.deepEqual(json.roles.map((r) => r.instance), ["holder-h-e1", "holder-h-w1", "writer-w1", "controller-ctl-1", "base-builder-h-w1"]);
  for (const r of json.roles) {
    const cfg = readRoleConfig(r.config, schemas[r.role] as never) as Record<string, unknown>;
    t.is(cfg["role"], r.role);
    const files = readdirSync(r.dir).sort();
    const keyFiles = files.filter((f) => f.endsWith(".key"));
    for (const k of keyFiles) t.is(statSync(join(r.dir, k)).mode & 0o777, 0o600, `${r.instance}/${k}`);
    if (r.role === "holder") t.deepEqual(keyFiles, ["holder.key"], "a holder never gets the volume's data key");
    if (r.role === "writer" || r.role === "base-builder") t.deepEqual(keyFiles, ["data.key"]);
    if (r.role === "controller") t.deepEqual(keyFiles, ["signing.key"], "a controller gets only the key it signs control-log events with");
  }
  const writerKey = readFileSync(join(out, "roles", "writer-w1", "data.key"));
  t.is(writerKey.length, 32);
  t.deepEqual(readFileSync(join(out, "roles", "base-builder-h-w1", "data.key")), writerKey, "the base builder decrypts with the writer's key");
  const east = readFileSync(join(out, "nats", "east.conf"), "utf8");
  const d = JSON.parse(readFileSync(file, "utf8")) as { regions: Record<string, { gatewayPort: number; port: number }> };
  t.true(east.includes(`{ name: "west", url: "nats://127.0.0.1:${d.regions["west"]!.gatewayPort}" }`), east);
  t.true(east.includes("jetstream {"));
  const holderCfg = JSON.parse(readFileSync(join(out, "roles", "holder-h-w1", "config.json"), "utf8")) as { nats: { servers: string } };
  t.is(holderCfg.nats.servers, `nats://127.0.0.1:${d.regions["west"]!.port}`, "a holder connects to its own region");
  const boot = JSON.parse(readFileSync(join(out, "bootstrap.json"), "utf8")) as { holders: { id: string; failureDomain: string }[]; obligations: { holders: string[] }[] };
  t.deepEqual(boot.holders.map((h) => `${h.id}@${h.failureDomain}`), ["h-e1@east/east-az2/e1-host", "h-w1@west/west-az1/w1-host"]);
  t.deepEqual(boot.obligations[0]!.holders, ["h-e1", "h-w1"]);

  const again = await failed(custody(["init", file, "--out", out]));
  t.is(again.code, 1, "an output that already holds a deployment is refused: new keys would not match the admitted ones");
  t.regex(again.stderr, /already holds a deployment/);
});

test("an unknown key in the deployment is an error naming its path, and nothing is written", async (t) => {
  const { dir, file } = await deploymentFile((d) => (d["holders"][1]["residencey"] = "disk"));
  const r = await failed(custody(["init", file, "--out", join(dir, "out")]));
  t.is(r.code, 1);
  t.regex(r.stderr, /invalid_deployment.*unknown key holders\.1\.residencey/);
  t.false(existsSync(join(dir, "out")));
});

test("a lane whose upstream names neither a holder nor the volume's writer is refused naming the path", async (t) => {
  const { dir, file } = await deploymentFile((d) => (d["holders"][0]["lanes"][0]["upstream"] = ["w2"]));
  const r = await failed(custody(["init", file, "--out", join(dir, "out")]));
  t.is(r.code, 1);
  t.regex(r.stderr, /holders\.0\.lanes\.0\.upstream: unknown holder or writer w2/);
  t.false(existsSync(join(dir, "out")));
});

test("the plan puts the holder's public key in the bootstrap and its private key only in its own directory, and paths point at the machines' directories", async (t) => {
  const dir = tempDir("custody-plan-");
  const d = parseDeployment({ ...(await loopbackDeployment(dir)), paths: { configDir: "/etc/custody", stateDir: "/var/lib/custody" } });
  let n = 0;
  const keys: KeySource = { holderKey: () => ({ pkcs8: new Uint8Array([++n]), publicRaw: new Uint8Array(32).fill(n) }), dataKey: () => new Uint8Array(32).fill(0xdd) };
  let u = 0;
  const plan = planDeployment(d, "/out", keys, { nkeyUser: () => ({ seed: `SU${++u}`, publicKey: `U${String.fromCharCode(65 + u).repeat(55)}` }), caPem: "CA\n" });
  t.deepEqual(plan.bootstrap.holders.map((h) => h.publicKey), ["01".repeat(32), "02".repeat(32)]);
  const holderKeys = plan.files.filter((f) => f.path.endsWith("holder.key"));
  t.deepEqual(holderKeys.map((f) => [f.path, [...(f.contents as Uint8Array)], f.mode]), [["/out/roles/holder-h-e1/holder.key", [1], 0o600], ["/out/roles/holder-h-w1/holder.key", [2], 0o600]]);
  const holder = JSON.parse(plan.files.find((f) => f.path === "/out/roles/holder-h-w1/config.json")!.contents as string) as { keyFile: string; stateDir: string };
  t.is(holder.keyFile, "/etc/custody/holder-h-w1/holder.key");
  t.is(holder.stateDir, "/var/lib/custody/holder-h-w1");
  t.is(plan.roles.find((r) => r.instance === "writer-w1")!.config, "/etc/custody/writer-w1/config.json");
  const dataKeyHolders = plan.files.filter((f) => f.path.endsWith("data.key")).map((f) => f.path);
  t.deepEqual(dataKeyHolders, ["/out/roles/writer-w1/data.key", "/out/roles/base-builder-h-w1/data.key"]);
  const ctl = JSON.parse(plan.files.find((f) => f.path === "/out/roles/controller-ctl-1/config.json")!.contents as string) as { controller: { topology: { bases: { holder: string }[]; links: { from: string; to: string }[]; sites: unknown[]; scenarios: { name: string }[]; releasable: string[]; durable: string[] } } };
  const topo = ctl.controller.topology;
  t.deepEqual(topo.durable, ["h-w1"], "the disk holder is released only onto disk or a base, even before its first flush");
  t.deepEqual(topo.bases.map((b) => b.holder), ["h-w1"], "the empty genesis base is kept by the disk holder");
  t.is(topo.links.length, topo.sites.length * (topo.sites.length - 1), "every pair of sites is linked both ways");
  t.deepEqual(topo.scenarios.map((s) => s.name), ["crash:h-e1", "crash:h-w1"]);
  t.deepEqual(topo.releasable, ["h-e1", "h-w1"], "RAM holders shed custody by default, and a store with a base builder beside it its WAL below the bases");
  t.false("persistenceTargets" in ctl.controller, "every disk holder flushes unless the volume asks for targets");
});

test("a volume that asks for persistence targets gets a controller choosing among its disk holders", async (t) => {
  const dir = tempDir("custody-plan-");
  const base = await loopbackDeployment(dir);
  const withTargets = (targets: unknown) => ({ ...base, volumes: (base["volumes"] as Record<string, unknown>[]).map((v) => ({ ...v, persistenceTargets: targets })) });
  const d = parseDeployment(withTargets({ copies: 2 }));
  const keys: KeySource = { holderKey: () => ({ pkcs8: new Uint8Array([1]), publicRaw: new Uint8Array(32).fill(1) }), dataKey: () => new Uint8Array(32).fill(0xdd) };
  let u = 0;
  const plan = planDeployment(d, "/out", keys, { nkeyUser: () => ({ seed: `SU${++u}`, publicKey: `U${String.fromCharCode(65 + u).repeat(55)}` }), caPem: "CA\n" });
  const ctl = JSON.parse(plan.files.find((f) => f.path === "/out/roles/controller-ctl-1/config.json")!.contents as string) as { controller: { persistenceTargets?: unknown } };
  t.deepEqual(ctl.controller.persistenceTargets, { candidates: ["h-w1"], copies: 2 });
  t.throws(() => parseDeployment(withTargets({ copies: 0 })), { message: /persistenceTargets\.copies/ });
});

test("a bootstrap file with an unknown key or a public key that is not 64 hex digits is refused naming the path", (t) => {
  const good = { controlRegion: "ctl", holders: [{ id: "h1", incarnation: 1, publicKey: "ab".repeat(32), failureDomain: "r/az/h" }], obligations: [{ volume: "v", lane: "l0", holders: ["h1"] }] };
  t.is(parseBootstrap(good).holders[0]!.id, "h1");
  const extra = t.throws(() => parseBootstrap({ ...good, holders: [{ ...good.holders[0], incarnaton: 2 }] }));
  t.regex(extra.message, /unknown key holders\.0\.incarnaton/);
  t.is((extra as unknown as { code: string }).code, "invalid_deployment");
  const short = t.throws(() => parseBootstrap({ ...good, holders: [{ ...good.holders[0], publicKey: "ab" }] }));
  t.regex(short.message, /holders\.0\.publicKey/);
});

test("custody init secures the deployment: a CA and a certificate per region, an nkey seed (0600) and the CA beside every role and the operator, servers with users, permissions and TLS on clients, routes and gateways", async (t) => {
  const { dir, file } = await deploymentFile();
  const out = join(dir, "out");
  const json = JSON.parse((await custody(["init", file, "--out", out, "--json"])).stdout.trim()) as { roles: { instance: string; role: keyof typeof schemas; config: string; dir: string }[] };
  for (const f of ["ca.pem", "east-cert.pem", "west-cert.pem"]) t.true(existsSync(join(out, "nats", "tls", f)), f);
  for (const f of ["ca-key.pem", "east-key.pem", "west-key.pem"]) t.is(statSync(join(out, "nats", "tls", f)).mode & 0o777, 0o600, f);
  const seeds = new Set<string>();
  for (const r of json.roles) {
    const cfg = readRoleConfig(r.config, schemas[r.role] as never) as { nats: { credentials?: { nkeySeedFile: string; inboxPrefix?: string }; tls?: { caFile: string } } };
    t.is(cfg.nats.credentials?.nkeySeedFile, join(r.dir, "nats.nk"), r.instance);
    t.regex(cfg.nats.credentials?.inboxPrefix ?? "", new RegExp(`^_INBOX\\.${r.role}\\.`), r.instance);
    t.is(cfg.nats.tls?.caFile, join(r.dir, "ca.pem"), r.instance);
    t.is(statSync(join(r.dir, "nats.nk")).mode & 0o777, 0o600, `${r.instance} seed`);
    seeds.add(readNkeySeed(join(r.dir, "nats.nk")).publicKey);
  }
  t.is(seeds.size, json.roles.length, "every role instance is its own NATS user");
  const op = JSON.parse(readFileSync(join(out, "operator", "nats.json"), "utf8")) as { credentials: { nkeySeedFile: string; inboxPrefix: string } };
  t.is(op.credentials.inboxPrefix, "_INBOX.operator.operator");
  const opKey = readNkeySeed(op.credentials.nkeySeedFile).publicKey;
  for (const region of ["east", "west"]) {
    const conf = readFileSync(join(out, "nats", `${region}.conf`), "utf8");
    for (const k of [...seeds, opKey]) t.true(conf.includes(`nkey: "${k}"`), `${region} lists ${k}`);
    t.is(conf.match(/tls \{/g)?.length, 3, `${region}: client, cluster and gateway TLS`);
    t.is(conf.match(/verify: true/g)?.length, 2, `${region}: routes and gateways verify their peers`);
    t.true(conf.includes(`${region}-cert.pem`));
  }
});

test("a deployment with \"security\": \"none\" writes open servers and anonymous roles (for unit tests)", async (t) => {
  const { dir, file } = await deploymentFile((d) => (d["security"] = "none"));
  const out = join(dir, "out");
  await custody(["init", file, "--out", out]);
  const holder = JSON.parse(readFileSync(join(out, "roles", "holder-h-e1", "config.json"), "utf8")) as { nats: Record<string, unknown> };
  t.deepEqual(Object.keys(holder.nats), ["servers"]);
  t.false(readFileSync(join(out, "nats", "east.conf"), "utf8").includes("authorization"));
  t.false(existsSync(join(out, "nats", "tls")));
  t.false(existsSync(join(out, "roles", "holder-h-e1", "nats.nk")));
});

test("shaped legs give each holder and writer a links section naming the holders across a leg, and the controllers' estimate that leg's bandwidth; spanDir gives every role a span file; timelines and recovery steps reach the controller", async (t) => {
  const dir = tempDir("custody-plan-shaped-");
  const raw = await loopbackDeployment(dir);
  const volume = (raw["volumes"] as Record<string, unknown>[])[0]!;
  const d = parseDeployment({
    ...raw,
    security: "none",
    paths: { spanDir: "/runs/spans" },
    holders: (raw["holders"] as Record<string, unknown>[]).map((h, i) => (i === 0 ? { ...h, drainDeadlineMs: 0 } : h)),
    network: { bandwidthBytesPerSec: 125_000_000, shapedLinks: [{ from: "s-w", to: "s-w1", latencyMs: 35, jitterMs: 3, bandwidthMBps: 0.5 }] },
    volumes: [{ ...volume, writer: { ...(volume["writer"] as object), workload: { intervalMs: 0, ratePerSec: 50, blocksPerWrite: 16 } }, timelines: [{ name: "east, then west", minIntervalSec: 60, deadlineSec: 1800, required: false, events: [{ afterSec: 0, losses: [{ domain: "region:east", kind: "site_destruction" }] }, { afterSec: 60, losses: [{ domain: "region:west", kind: "site_destruction" }] }] }], recoverySteps: { detectSec: 5, authorizeSec: 1, acquireCapacitySec: 2, persistSec: 1, validateSec: 1 } }],
  });
  let n = 0;
  const plan = planDeployment(d, "/out", { holderKey: () => ({ pkcs8: new Uint8Array([++n]), publicRaw: new Uint8Array(32).fill(n) }), dataKey: () => new Uint8Array(32) });
  const config = (instance: string) => JSON.parse(plan.files.find((f) => f.path === `/out/roles/${instance}/config.json`)!.contents as string) as Record<string, any>;
  const writer = writerRoleSchema.parse(config("writer-w1"));
  t.deepEqual(writer.links, { site: "s-w", peers: { "h-w1": { site: "s-w1", latencyMs: 35, jitterMs: 3, bandwidthMBps: 0.5 } } }, "only the holder across the shaped leg is shaped");
  t.is(writer.spanFile, "/runs/spans/w1.jsonl");
  t.is(writer.workload?.blocksPerWrite, 16);
  const west = holderRoleSchema.parse(config("holder-h-w1"));
  t.deepEqual(west.links, { site: "s-w1", peers: {} }, "no shaped leg joins the west holder's site to another holder's");
  t.is(west.spanFile, "/runs/spans/h-w1.jsonl");
  t.is(holderRoleSchema.parse(config("holder-h-e1")).drainDeadlineMs, 0, "the holder's drain deadline from the deployment");
  const ctl = controllerRoleSchema.parse(config("controller-ctl-1"));
  t.is(ctl.spanFile, "/runs/spans/ctl-1.jsonl");
  const topo = (ctl.controller as { topology: { links: { from: string; to: string; bandwidthBytesPerSec: number }[]; timelines: { name: string }[]; recovery: { detectSec: number } } }).topology;
  t.is(topo.links.find((l) => l.from === "s-w1" && l.to === "s-w")?.bandwidthBytesPerSec, 500_000, "the shaped leg's bandwidth, either way round");
  t.is(topo.links.find((l) => l.from === "s-w" && l.to === "s-e1")?.bandwidthBytesPerSec, 125_000_000);
  t.deepEqual(topo.timelines.map((x) => x.name), ["east, then west"]);
  t.is(topo.recovery.detectSec, 5);
  const unknownSite = t.throws(() => parseDeployment({ ...raw, network: { bandwidthBytesPerSec: 1, shapedLinks: [{ from: "s-w", to: "s-nowhere", latencyMs: 1, bandwidthMBps: 1 }] } }));
  t.regex(unknownSite.message, /network\.shapedLinks\.0\.to: unknown site s-nowhere/);
});

test("a deployment's metrics section takes an OTLP push as a role config does, reaches the role's config, and is strict", async (t) => {
  const dir = tempDir("custody-plan-otlp-");
  const raw = await loopbackDeployment(dir);
  const otlp = { url: "http://127.0.0.1:4318/v1/metrics", intervalMs: 5_000 };
  const holders = raw["holders"] as Record<string, unknown>[];
  const d = parseDeployment({ ...raw, security: "none", holders: holders.map((h, i) => (i === 0 ? { ...h, metrics: { otlp } } : h)) });
  let n = 0;
  const plan = planDeployment(d, "/out", { holderKey: () => ({ pkcs8: new Uint8Array([++n]), publicRaw: new Uint8Array(32).fill(n) }), dataKey: () => new Uint8Array(32) });
  const first = holders[0]!["id"] as string;
  const config = JSON.parse(plan.files.find((f) => f.path === `/out/roles/holder-${first}/config.json`)!.contents as string);
  t.deepEqual(holderRoleSchema.parse(config).metrics, { otlp });
  const bad = t.throws(() => parseDeployment({ ...raw, security: "none", holders: holders.map((h, i) => (i === 0 ? { ...h, metrics: { otlp: { ...otlp, every: 1 } } } : h)) }));
  t.regex(bad!.message, /holders\.0\.metrics\.otlp/);
});

test("a standby holder gets its config and key like any holder, but the bootstrap admits it to nothing; the controller lists it under repair.standby with the key issued to it", async (t) => {
  const d = parseDeployment(await loopbackDeployment(tempDir("custody-plan-standby-"), { standby: true }));
  let n = 0;
  const keys: KeySource = { holderKey: () => ({ pkcs8: new Uint8Array([++n]), publicRaw: new Uint8Array(32).fill(n) }), dataKey: () => new Uint8Array(32) };
  let u = 0;
  const plan = planDeployment(d, "/out", keys, { nkeyUser: () => ({ seed: `SU${++u}`, publicKey: `U${String.fromCharCode(65 + u).repeat(55)}` }), caPem: "CA\n" });
  t.deepEqual(plan.bootstrap.holders.map((h) => h.id), ["h-e1", "h-w1"]);
  t.deepEqual(plan.bootstrap.obligations.map((o) => o.holders), [["h-e1", "h-w1"]]);
  t.truthy(plan.files.find((f) => f.path === "/out/roles/holder-h-s1/holder.key" && f.mode === 0o600));
  t.truthy(plan.roles.find((r) => r.instance === "holder-h-s1" && r.role === "holder"));
  const config = (instance: string) => JSON.parse(plan.files.find((f) => f.path === `/out/roles/${instance}/config.json`)!.contents as string) as Record<string, any>;
  const ctl = config("controller-ctl-1")["controller"];
  t.deepEqual(ctl.repair, { standby: [{ holderId: "h-s1", site: "s-e3", publicKey: "03".repeat(32) }], bandwidthBytesPerSec: 125_000_000 });
  t.is(ctl.topology.holderSites["h-s1"], "s-e3", "its receipts count once it is admitted");
  t.deepEqual(ctl.topology.scenarios.map((s: { name: string }) => s.name), ["crash:h-e1", "crash:h-w1"]);
  t.deepEqual(ctl.topology.bases.map((b: { holder: string }) => b.holder), ["h-w1"]);
  t.deepEqual(config("writer-w1")["writer"].lanes[0].holders, ["h-e1", "h-w1"], "the writer never sends to a standby");
});

test("a standby cannot be a first hop, a downstream, a genesis base or a base builder's holder", async (t) => {
  const dir = tempDir("custody-plan-standby-bad-");
  const base = await loopbackDeployment(dir, { standby: true });
  const refused = (mutate: (d: Record<string, any>) => void) => {
    const d = structuredClone(base) as Record<string, any>;
    mutate(d);
    return t.throws(() => parseDeployment(d))?.message ?? "";
  };
  t.regex(refused((d) => (d["volumes"][0]["lanes"] = [{ lane: "l0", fromLba: 0, toLba: 255, firstHops: ["h-e1", "h-s1"] }])), /volumes\.0\.lanes\.0\.firstHops: h-s1 is a standby/);
  t.regex(refused((d) => (d["holders"][0]["lanes"][0]["downstream"] = ["h-s1"])), /holders\.0\.lanes\.0\.downstream: h-s1 is a standby/);
  t.regex(refused((d) => (d["volumes"][0]["genesisBases"] = ["h-s1"])), /volumes\.0\.genesisBases: h-s1 is a standby/);
  t.regex(refused((d) => (d["baseBuilders"] = [{ holder: "h-s1", volume: "vol-d", lane: "l0", intervalMs: 1000, minNewSeqs: 64 }])), /baseBuilders\.0\.holder: h-s1 is a standby/);
});

test("a volume's coalesced section is checked by the writer's own rules and against the holders, naming the path", async (t) => {
  const base = await loopbackDeployment(tempDir("custody-plan-coalesced-bad-"), { coalesced: true, standby: true });
  t.notThrows(() => parseDeployment(base), "h-img declares no lane: it serves the derived lane the section gives it");
  const refused = (mutate: (d: Record<string, any>) => void) => {
    const d = structuredClone(base) as Record<string, any>;
    mutate(d);
    const err = t.throws(() => parseDeployment(d));
    t.is((err as unknown as { code: string }).code, "invalid_deployment");
    return err?.message ?? "";
  };
  const section = (d: Record<string, any>) => d["volumes"][0]["coalesced"];
  t.regex(refused((d) => (section(d).holders = ["h-nowhere"])), /volumes\.0\.coalesced\.holders\.0: unknown holder h-nowhere/);
  t.regex(refused((d) => (section(d).holders = ["h-s1"])), /volumes\.0\.coalesced\.holders\.0: h-s1 is a standby/);
  t.regex(refused((d) => (section(d).holders = ["h-img", "h-img"])), /volumes\.0\.coalesced\.holders\.1: duplicate holder h-img/);
  t.regex(refused((d) => (section(d).holders = [])), /volumes\.0\.coalesced\.holders/);
  t.regex(refused((d) => (section(d).windowRecords = 0)), /volumes\.0\.coalesced: coalesced stream cadence and budgets must be positive integers/);
  t.regex(refused((d) => (section(d).windowMs = 2.5)), /volumes\.0\.coalesced: .*positive integers/);
  t.regex(refused((d) => (section(d).maxWindowBytes = 100)), /volumes\.0\.coalesced: coalesced window byte budget must hold at least one block/);
  t.regex(refused((d) => (section(d).laneSuffix = "")), /volumes\.0\.coalesced: derived lane name "l0" is not a free identifier/);
  t.regex(refused((d) => (section(d).laneSuffix = ".x")), /volumes\.0\.coalesced\.laneSuffix/);
  t.regex(refused((d) => (section(d).window = 3)), /unknown key volumes\.0\.coalesced\.window/);
  t.regex(refused((d) => (d["volumes"][0]["lanes"] = [{ lane: "l0", fromLba: 0, toLba: 99, firstHops: ["h-e1"] }, { lane: "l0-coalesced", fromLba: 100, toLba: 255, firstHops: ["h-w1"] }])), /volumes\.0\.coalesced: derived lane name "l0-coalesced" is not a free identifier/);
  t.regex(refused((d) => d["holders"][1]["lanes"].push({ volume: "vol-d", lane: "l0-coalesced", upstream: ["w1"] })), /holders\.1\.lanes\.1\.lane: l0-coalesced is vol-d's derived lane: volumes\.0\.coalesced\.holders gives it/);
  t.regex(refused((d) => delete d["volumes"][0]["coalesced"]), /holders\.3\.lanes: holder h-img serves no lane/);
});

test("a coalesced stream reaches every generated file: the writer's coalesced config and the holder's site, the holder's derived lane, the controller's topology, a coalesced obligation, and NATS permissions for the derived lane's subjects only", async (t) => {
  const d = parseDeployment(await loopbackDeployment(tempDir("custody-plan-coalesced-"), { coalesced: true }));
  let n = 0;
  const keys: KeySource = { holderKey: () => ({ pkcs8: new Uint8Array([++n]), publicRaw: new Uint8Array(32).fill(n) }), dataKey: () => new Uint8Array(32).fill(0xdd) };
  const users: string[] = [];
  const plan = planDeployment(d, "/out", keys, {
    nkeyUser: () => {
      const publicKey = `U${String.fromCharCode(65 + users.length).repeat(55)}`;
      users.push(publicKey);
      return { seed: `SU${users.length}`, publicKey };
    },
    caPem: "CA\n",
  });
  const config = (instance: string) => JSON.parse(plan.files.find((f) => f.path === `/out/roles/${instance}/config.json`)!.contents as string) as Record<string, any>;

  const writer = writerRoleSchema.parse(config("writer-w1")).writer as Record<string, any>;
  t.deepEqual(writer["coalesced"], { holders: ["h-img"], windowRecords: 32, windowMs: 500 });
  t.deepEqual(writer["lanes"].map((l: { lane: string; holders: string[] }) => `${l.lane}:${l.holders.join(",")}`), ["l0:h-e1,h-w1"], "the raw lanes are unchanged: the writer derives l0-coalesced itself");
  t.deepEqual(writer["holderSites"]["h-img"], { id: "s-w2", region: "west", az: "west-az2", host: "w2-host", deps: [] });

  const img = holderRoleSchema.parse(config("holder-h-img")).holder as Record<string, any>;
  t.deepEqual(img["lanes"], [{ volume: "vol-d", lane: "l0-coalesced", upstream: ["w1"], downstream: [], representation: "coalesced" }]);
  t.deepEqual(config("holder-h-img")["writerKeys"].map((k: { volume: string }) => k.volume), ["vol-d"], "it checks the writer's signature on derived units too");
  t.deepEqual(config("holder-h-e1")["holder"]["lanes"].map((l: { lane: string }) => l.lane), ["l0"], "raw holders serve only the raw lane");

  const topo = config("controller-ctl-1")["controller"]["topology"];
  t.deepEqual(topo.lanes, ["l0"]);
  t.deepEqual(topo.coalesced, { "l0-coalesced": "l0" });
  t.is(topo.holderSites["h-img"], "s-w2");
  t.true(topo.sites.some((s: { id: string }) => s.id === "s-w2"));
  t.deepEqual(topo.scenarios.map((s: { name: string }) => s.name), ["crash:h-e1", "crash:h-w1", "crash:h-img"]);
  t.deepEqual(topo.bases.map((b: { holder: string }) => b.holder), ["h-w1"], "genesis bases stay with the raw disk holders");
  t.deepEqual(topo.releasable, ["h-e1", "h-w1"]);

  t.deepEqual(plan.bootstrap.holders.map((h) => h.id), ["h-e1", "h-w1", "h-img"]);
  t.deepEqual(plan.bootstrap.obligations, [
    { volume: "vol-d", lane: "l0", holders: ["h-e1", "h-w1"] },
    { volume: "vol-d", lane: "l0-coalesced", holders: ["h-img"], representation: "coalesced" },
  ]);
  t.deepEqual(parseBootstrap(JSON.parse(plan.files.find((f) => f.path === "/out/bootstrap.json")!.contents as string)).obligations[1], plan.bootstrap.obligations[1], "the bootstrap file keeps the representation");

  // Permissions: the writer publishes derived units to h-img only; h-img subscribes to them and
  // publishes credits and receipts of the derived lane only; the raw holders get nothing of it.
  const conf = plan.files.find((f) => f.path === "/out/nats/east.conf")!.contents as string;
  const block = (label: string) => conf.slice(conf.indexOf(`# ${label}`), conf.indexOf("}\n    }", conf.indexOf(`# ${label}`)));
  const writerPerms = block("writer w1");
  const imgPerms = block("holder h-img");
  t.true(writerPerms.includes(`"${unitSubject("h-img", "vol-d", "l0-coalesced")}"`), writerPerms);
  t.false(writerPerms.includes(`"${unitSubject("h-e1", "vol-d", "l0-coalesced")}"`));
  t.true(writerPerms.includes(`"${creditSubject("h-img", "vol-d", "l0-coalesced")}"`));
  t.false(writerPerms.includes(`"${unitSubject("h-img", "vol-d", "l0")}"`), "h-img is no first hop of the raw lane");
  t.true(imgPerms.includes(`"${unitSubject("h-img", "vol-d", "l0-coalesced")}"`), imgPerms);
  t.true(imgPerms.includes(`"${receiptSubject("vol-d", "l0-coalesced")}"`));
  t.true(imgPerms.includes(`"${creditSubject("h-img", "vol-d", "l0-coalesced")}"`));
  t.false(imgPerms.includes(`"${receiptSubject("vol-d", "l0")}"`), "nothing of the raw lane");
  t.true(block("holder h-e1").includes(`"${unitSubject("h-e1", "vol-d", "l0")}"`));
  t.false(block("holder h-e1").includes("l0-coalesced"));
});

test("the bootstrap scopes each controller to its volume and each holder to the volumes of its obligations; a bootstrap file's controller must name its volumes", async (t) => {
  const dir = tempDir("custody-plan-");
  const d = parseDeployment(await loopbackDeployment(dir, { volume: "vol-a", secondVolume: true }));
  const keys: KeySource = { holderKey: () => ({ pkcs8: new Uint8Array([1]), publicRaw: new Uint8Array(32).fill(1) }), dataKey: () => new Uint8Array(32).fill(0xdd) };
  let u = 0;
  const plan = planDeployment(d, "/out", keys, { nkeyUser: () => ({ seed: `SU${++u}`, publicKey: `U${String.fromCharCode(65 + u).repeat(55)}` }), caPem: "CA\n" });
  t.deepEqual(plan.bootstrap.controllers.map((c) => [c.id, c.volumes]), [["ctl-1", ["vol-a"]], ["ctl-2", ["vol-b"]]]);
  t.deepEqual(plan.bootstrap.holders.map((h) => [h.id, h.volumes]), [["h-e1", ["vol-a"]], ["h-w1", ["vol-a"]], ["h-e2", ["vol-b"]]]);
  const file = parseBootstrap(JSON.parse(plan.files.find((f) => f.path === "/out/bootstrap.json")!.contents as string));
  t.deepEqual(file.controllers, plan.bootstrap.controllers, "the bootstrap file keeps the volumes");
  const unscoped = t.throws(() => parseBootstrap({ ...file, controllers: [{ id: "ctl-1", publicKey: "ab".repeat(32) }] }));
  t.regex(unscoped.message, /controllers\.0\.volumes/);
});

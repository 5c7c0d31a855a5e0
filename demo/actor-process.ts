/**
 * One demo actor in its own Node process:
 *   node --import tsx demo/actor-process.ts --role holder|writer|controller --config <file>
 * It connects to its region's nats-server, wraps the connection in the link shaper for its site,
 * exports spans (JSON lines in `<run>/spans/<id>.jsonl`, plus OTLP/HTTP when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set), runs the real actor, and answers the launcher's IPC calls.
 * It exits when told to stop, on SIGTERM, or when the launcher goes away (IPC disconnect), so a
 * crashed launcher never leaves actors behind.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { trace, type Tracer } from "@opentelemetry/api";
import { startController } from "../actors/controller.ts";
import { startHolder } from "../actors/holder.ts";
import { laneKey, type HolderConfigInput } from "../actors/holder/holder-config.ts";
import { holderSource } from "../actors/repair/survivor-source.ts";
import { startVolumeWriter } from "../actors/volume-writer.ts";
import { systemClock } from "../core/clock.ts";
import { RangeSet } from "../lanes/range-set.ts";
import { setupTracing, otlpEndpointConfigured, SpanExporterKind, type TracingHandle } from "../telemetry/tracing.ts";
import { initJetStreamControlLog } from "../transport/jetstream-control-log.ts";
import { NatsTransport } from "../transport/nats-transport.ts";
import { SmartWalVolume } from "../volume/smartwal-volume.ts";
import { ActorRole, type ActorProcessConfig } from "./actor-protocol.ts";
import { loadDeployment, sitesOf, siteOfActor, topologyOf, type Deployment } from "./deployment.ts";
import { deploymentRoute } from "./deployment-route.ts";
import { dataKeyOf, holderPrivateKey, holderPublicRaw, loadKeyMaterial, peerDirectory, type KeyMaterial } from "./key-material.ts";
import { ShapedTransport } from "./link-shaper.ts";
import { blockData } from "./workload.ts";

type Handler = (args: Record<string, unknown>) => Promise<unknown> | unknown;

interface Running {
  handlers: Record<string, Handler>;
  stop(): Promise<void>;
}

function shaped(inner: NatsTransport, d: Deployment, site: string, tracer: Tracer): ShapedTransport {
  return new ShapedTransport(inner, { fromSite: site, route: deploymentRoute(d, site), clock: systemClock, random: Math.random, tracer });
}

async function runHolder(cfg: ActorProcessConfig, d: Deployment, km: KeyMaterial, tracer: Tracer): Promise<Running> {
  const h = d.holders.find((x) => x.id === cfg.id)!;
  const site = d.sites.find((s) => s.id === h.site)!;
  const nats = await NatsTransport.connect({ servers: cfg.natsUrl, name: cfg.id });
  const transport = shaped(nats, d, site.id, tracer);
  // Wall time of each unit's first admission here: how early this site captured the bytes.
  const captured: [number, number, number][] = [];
  const input: HolderConfigInput = {
    holderId: h.id,
    incarnation: 1,
    site: { region: site.region, az: site.az, host: `${site.id}-host` },
    residency: ["ram"],
    lanes: [{ volume: d.volume, lane: d.lane, upstream: h.upstream, downstream: h.downstream }],
    arena: { segmentBytes: 256 * 1024, limitBytes: 32 * 1024 * 1024, maxOutstandingCredit: 1024 * 1024, maxUnitBytes: 128 * 1024 },
    receipts: { maxUnits: 16, maxDelayMs: 5 },
    epoch: 1,
    policyGeneration: 1,
  };
  const holder = await startHolder(input, {
    transport,
    clock: systemClock,
    privateKey: holderPrivateKey(km, h.id),
    peers: peerDirectory(km),
    observe: (o) => {
      if (o.type === "admitted") captured.push([o.first, o.last, Date.now()]);
    },
  });
  const source = holderSource(holder);
  const all = () => source.units(d.volume, d.lane, RangeSet.of(0, Number.MAX_SAFE_INTEGER));
  return {
    handlers: {
      units: () => all(),
      stats: () => {
        const retained = holder.core.lanes.get(laneKey(d.volume, d.lane))?.log.retained ?? RangeSet.EMPTY;
        return { retained: retained.toJSON(), bytes: all().reduce((n, u) => n + u.payload.byteLength, 0), captured };
      },
    },
    async stop() {
      await holder.stop();
      await transport.close();
    },
  };
}

async function runWriter(cfg: ActorProcessConfig, d: Deployment, km: KeyMaterial, tracer: Tracer): Promise<Running> {
  const dir = join(cfg.runDir, "writer", "volume");
  mkdirSync(join(cfg.runDir, "writer"), { recursive: true });
  await SmartWalVolume.create(dir, { blockCount: d.blocks, walCapacity: 8192 });
  const volume = await SmartWalVolume.open(dir);
  const nats = await NatsTransport.connect({ servers: cfg.natsUrl, name: cfg.id });
  const transport = shaped(nats, d, d.writer.site, tracer);
  const sites = Object.fromEntries(sitesOf(d).map((s) => [s.id, s]));
  const writer = startVolumeWriter(
    {
      writerId: d.writer.id,
      volume: d.volume,
      term: 1,
      lanes: [{ lane: d.lane, fromLba: 0, toLba: d.blocks - 1, holders: d.writer.holders }],
      contracts: [d.writer.contract],
      holderSites: Object.fromEntries(d.holders.map((h) => [h.id, sites[h.site]!])),
      topologyEpoch: 1,
      policyGeneration: 1,
    },
    { transport, clock: systemClock, volume, dataKey: dataKeyOf(km), peers: peerDirectory(km) },
  );
  return {
    handlers: {
      write: async (a) => {
        const lba = Number(a["lba"]);
        const seed = Number(a["seed"]);
        const blocks = Number(a["blocks"] ?? 1);
        // The write's span is active while the writer hands units to the shaped links, so every
        // first hop's `link.send` (and through it each holder's admit) hangs under it.
        return tracer.startActiveSpan("writer.write", { attributes: { "custody.volume": d.volume, "custody.lba": lba, "custody.blocks": blocks } }, async (span) => {
          try {
            const ack = await writer.write(lba, blockData(seed, blocks));
            const seq = ack.pieces[0]?.seq ?? -1;
            span.setAttributes({ "custody.lsn": ack.lsn, "custody.seq": seq, "custody.lane": d.lane });
            return { lsn: ack.lsn, seq, atMs: Date.now() };
          } finally {
            span.end();
          }
        });
      },
      sync: async (a) => writer.sync(a["contract"] as string | undefined, Number(a["timeoutMs"] ?? 10_000)),
    },
    async stop() {
      writer.stop();
      await volume.close().catch(() => undefined);
      await transport.close();
    },
  };
}

async function runController(cfg: ActorProcessConfig, d: Deployment, km: KeyMaterial): Promise<Running> {
  const transport = await NatsTransport.connect({ servers: cfg.natsUrl, name: cfg.id });
  // The demo's controller is its operator too: it bootstraps the control log it then commits to.
  const { log: store } = await initJetStreamControlLog(transport.connection, { region: d.controller.region });
  const controller = await startController({ controllerId: d.controller.id, region: d.controller.region, topology: topologyOf(d), evalIntervalMs: 50 }, { transport, clock: systemClock, store });
  const sites = Object.fromEntries(d.sites.map((s) => [s.id, s]));
  await controller.core.bootstrap(
    d.holders.map((h) => {
      const s = sites[h.site]!;
      return { holderId: h.id, incarnation: 1, publicKey: holderPublicRaw(km, h.id), failureDomain: `${s.region}/${s.az}/${h.site}-host` };
    }),
    d.holders.map((h) => h.id),
  );
  return {
    handlers: {
      status: () => controller.core.status ?? null,
      addBase: (a) => {
        controller.core.addBase(a["base"] as Parameters<typeof controller.core.addBase>[0]);
        return true;
      },
      // A fresh evaluation (newer than now), for predictions taken at a known moment.
      evaluate: async () => {
        const before = controller.core.status?.asOfMs ?? 0;
        const deadline = Date.now() + 5000;
        controller.evaluateSoon();
        while ((controller.core.status?.asOfMs ?? 0) <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        return controller.core.status ?? null;
      },
    },
    async stop() {
      controller.stop();
      await transport.close();
    },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { role: { type: "string" }, config: { type: "string" } } });
  const cfg = JSON.parse(readFileSync(values.config!, "utf8")) as ActorProcessConfig;
  if (cfg.role !== values.role) throw new Error(`--role ${values.role} does not match the config's ${cfg.role}`);
  const d = loadDeployment(cfg.deploymentPath);
  const km = loadKeyMaterial(cfg.keysPath);
  mkdirSync(join(cfg.runDir, "spans"), { recursive: true });
  const site = cfg.role === ActorRole.Controller ? d.controller.region : (siteOfActor(d, cfg.id) ?? "");
  const tracing: TracingHandle = setupTracing({
    serviceName: `custody-${cfg.role}-${cfg.id}`,
    attributes: { "custody.actor": cfg.id, "custody.role": cfg.role, "custody.site": site },
    exporter: otlpEndpointConfigured() ? [SpanExporterKind.Jsonl, SpanExporterKind.Otlp] : SpanExporterKind.Jsonl,
    jsonlPath: join(cfg.runDir, "spans", `${cfg.id}.jsonl`),
  });
  // Flush often: a SIGKILLed process must still leave the spans of what it did before.
  const flusher = setInterval(() => void tracing.provider.forceFlush().catch(() => undefined), 250);
  const tracer = trace.getTracer("custody.demo");
  let running: Running;
  try {
    running =
      cfg.role === ActorRole.Holder
        ? await runHolder(cfg, d, km, tracer)
        : cfg.role === ActorRole.Writer
          ? await runWriter(cfg, d, km, tracer)
          : await runController(cfg, d, km);
  } catch (err) {
    process.send?.({ fatal: (err as Error).message });
    clearInterval(flusher);
    await tracing.shutdown().catch(() => undefined);
    process.exit(1);
  }
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      clearInterval(flusher);
      await running.stop().catch(() => undefined);
      await tracing.shutdown().catch(() => undefined);
      process.exit(0);
    })());
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
  process.on("disconnect", () => void stop());
  process.on("message", (m: { id: number; op: string; args?: Record<string, unknown> }) => {
    if (m.op === "stop") {
      process.send?.({ id: m.id, ok: true, result: true });
      void stop();
      return;
    }
    const h = running.handlers[m.op];
    if (h === undefined) {
      process.send?.({ id: m.id, ok: false, error: { code: "unknown_op", message: `unknown op ${m.op}` } });
      return;
    }
    Promise.resolve()
      .then(() => h(m.args ?? {}))
      .then(
        (result) => process.send?.({ id: m.id, ok: true, result }),
        (err: { code?: string; message?: string }) => process.send?.({ id: m.id, ok: false, error: { code: err.code ?? "error", message: err.message ?? String(err) } }),
      );
  });
  process.send?.({ ready: true });
}

void main().catch((err) => {
  process.send?.({ fatal: (err as Error).message });
  console.error(err);
  process.exit(1);
});

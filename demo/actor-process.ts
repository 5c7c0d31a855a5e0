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
import { startController } from "../actors/index.ts";
import { startHolder } from "../actors/index.ts";
import { laneKey, type HolderConfigInput } from "../actors/index.ts";
import { holderSource } from "../actors/index.ts";
import { startVolumeWriter, type VolumeWriter } from "../actors/index.ts";
import { systemClock } from "../core/index.ts";
import { RangeSet } from "../lanes/index.ts";
import { setupTracing, otlpEndpointConfigured, SpanExporterKind, type TracingHandle } from "../telemetry/index.ts";
import { initJetStreamControlLog } from "../transport/index.ts";
import { NatsTransport } from "../transport/index.ts";
import { SmartWalVolume } from "../volume/index.ts";
import { ActorRole, type ActorProcessConfig } from "./actor-protocol.ts";
import { loadDeployment, sitesOf, siteOfActor, topologyOf, volumesOf, type Deployment } from "./deployment.ts";
import { deploymentRoute } from "./deployment-route.ts";
import { dataKeyOf, holderPrivateKey, holderPublicRaw, loadKeyMaterial, peerDirectory, type KeyMaterial } from "./key-material.ts";
import { ShapedTransport } from "../transport/index.ts";
import { deploymentOfVolume } from "./waypoint-variant.ts";
import { blockData, lbaOf, seedOf } from "./workload.ts";

type Handler = (args: Record<string, unknown>) => Promise<unknown> | unknown;

interface Running {
  handlers: Record<string, Handler>;
  stop(): Promise<void>;
}

function shaped(inner: NatsTransport, d: Deployment, site: string, tracer: Tracer): ShapedTransport {
  return new ShapedTransport(inner, { fromSite: site, route: deploymentRoute(d, site), clock: systemClock, random: Math.random, tracer });
}

/** Bytes one unit of the workload carries (its blocks), for the custody figures. */
const unitBytes = (d: Deployment) => d.workload.blocksPerWrite * 4096;

async function runHolder(cfg: ActorProcessConfig, d: Deployment, km: KeyMaterial, tracer: Tracer): Promise<Running> {
  const h = d.holders.find((x) => x.id === cfg.id)!;
  const site = d.sites.find((s) => s.id === h.site)!;
  const nats = await NatsTransport.connect({ servers: cfg.natsUrl, name: cfg.id });
  const transport = shaped(nats, d, site.id, tracer);
  // Every volume whose custody path includes this holder, with that path's edges.
  const lanes = volumesOf(d).flatMap((volume) => {
    const mine = deploymentOfVolume(d, volume).holders.find((x) => x.id === h.id);
    return mine === undefined ? [] : [{ volume, lane: d.lane, upstream: mine.upstream, downstream: mine.downstream }];
  });
  const volumes = lanes.map((l) => l.volume);
  // Wall time of each first-volume unit's admission here: how early this site captured the bytes.
  const captured: [number, number, number][] = [];
  const firstKey = laneKey(d.volume, d.lane);
  const input: HolderConfigInput = {
    holderId: h.id,
    incarnation: 1,
    site: { region: site.region, az: site.az, host: `${site.id}-host` },
    residency: ["ram"],
    lanes,
    // Non-releasable stores keep the whole stream of every volume in RAM for the run.
    arena: { segmentBytes: 1024 * 1024, limitBytes: 512 * 1024 * 1024, maxOutstandingCredit: 4 * 1024 * 1024, maxUnitBytes: 128 * 1024 },
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
      if (o.type === "admitted" && o.lane === firstKey) captured.push([o.first, o.last, Date.now()]);
    },
  });
  const source = holderSource(holder);
  const retained = (volume: string) => holder.core.lanes.get(laneKey(volume, d.lane))?.log.retained ?? RangeSet.EMPTY;
  return {
    handlers: {
      units: (a) => source.units(String(a["volume"] ?? d.volume), d.lane, RangeSet.of(0, Number.MAX_SAFE_INTEGER)),
      stats: () => ({
        volumes: Object.fromEntries(volumes.map((v) => [v, { retained: retained(v).toJSON(), bytes: retained(v).count * unitBytes(d) }])),
        // Units this holder still holds back on a shaped link (in flight to a downstream holder).
        inFlight: transport.inFlight,
        captured,
      }),
    },
    async stop() {
      await holder.stop();
      await transport.close();
    },
  };
}

async function runWriter(cfg: ActorProcessConfig, d: Deployment, km: KeyMaterial, tracer: Tracer): Promise<Running> {
  const nats = await NatsTransport.connect({ servers: cfg.natsUrl, name: cfg.id });
  const transport = shaped(nats, d, d.writer.site, tracer);
  const sites = Object.fromEntries(sitesOf(d).map((s) => [s.id, s]));
  const writers = new Map<string, { writer: VolumeWriter; volume: SmartWalVolume }>();
  for (const name of volumesOf(d)) {
    const dv = deploymentOfVolume(d, name);
    const dir = join(cfg.runDir, "writer", name);
    mkdirSync(join(cfg.runDir, "writer"), { recursive: true });
    await SmartWalVolume.create(dir, { blockCount: d.blocks, walCapacity: 65_536 });
    const volume = await SmartWalVolume.open(dir);
    const writer = startVolumeWriter(
      {
        writerId: d.writer.id,
        volume: name,
        term: 1,
        lanes: [{ lane: d.lane, fromLba: 0, toLba: d.blocks - 1, holders: dv.writer.holders }],
        contracts: [d.writer.contract],
        holderSites: Object.fromEntries(dv.holders.map((h) => [h.id, sites[h.site]!])),
        topologyEpoch: 1,
        policyGeneration: 1,
      },
      { transport, clock: systemClock, volume, dataKey: dataKeyOf(km), peers: peerDirectory(km) },
    );
    writers.set(name, { writer, volume });
  }
  const blocks = d.workload.blocksPerWrite;
  const writeOne = (name: string, k: number) =>
    // The write's span is active while the writer hands units to the shaped links, so every
    // first hop's `link.send` (and through it each holder's admit) hangs under it.
    tracer.startActiveSpan("writer.write", { attributes: { "custody.volume": name, "custody.blocks": blocks } }, async (span) => {
      try {
        const ack = await writers.get(name)!.writer.write(lbaOf(k, d.blocks, blocks), blockData(seedOf(name, k), blocks));
        const seq = ack.pieces[0]?.seq ?? -1;
        span.setAttributes({ "custody.lsn": ack.lsn, "custody.seq": seq, "custody.lane": d.lane });
        return { lsn: ack.lsn, seq };
      } finally {
        span.end();
      }
    });
  let streaming = true;
  return {
    handlers: {
      // The sustained workload: every volume at `writesPerSec`, up to `depth` writes in flight per
      // volume, issued in order (the volume gives LSNs in issue order); each acknowledgement is
      // reported at once (an ack the launcher never saw is not acknowledged).
      stream: async (a) => {
        const seconds = Number(a["seconds"]);
        const t0 = Date.now();
        const counts: Record<string, number> = {};
        await Promise.all(
          [...writers.keys()].map(async (name) => {
            let k = 0;
            const inFlight = new Set<Promise<void>>();
            while (streaming && Date.now() - t0 < seconds * 1000) {
              const due = t0 + (k * 1000) / d.workload.writesPerSec;
              if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
              while (inFlight.size >= d.workload.depth) await Promise.race(inFlight);
              const mine = k++;
              const p: Promise<void> = writeOne(name, mine).then(
                (ack) => void process.send?.({ ack: { volume: name, k: mine, lsn: ack.lsn, seq: ack.seq, atMs: Date.now() } }),
                () => undefined,
              );
              inFlight.add(p);
              void p.finally(() => inFlight.delete(p));
            }
            await Promise.all(inFlight);
            counts[name] = k;
          }),
        );
        return counts;
      },
      sync: async (a) => writers.get(String(a["volume"] ?? d.volume))!.writer.sync(a["contract"] as string | undefined, Number(a["timeoutMs"] ?? 10_000)),
    },
    async stop() {
      streaming = false;
      for (const w of writers.values()) {
        w.writer.stop();
        await w.volume.close().catch(() => undefined);
      }
      await transport.close();
    },
  };
}

async function runController(cfg: ActorProcessConfig, d: Deployment, km: KeyMaterial): Promise<Running> {
  const transport = await NatsTransport.connect({ servers: cfg.natsUrl, name: cfg.id });
  const sites = Object.fromEntries(d.sites.map((s) => [s.id, s]));
  const controllers = new Map<string, Awaited<ReturnType<typeof startController>>>();
  for (const volume of volumesOf(d)) {
    // One controller per volume, each with its own control log in the controller's region.
    // The demo's controller is its operator too: it bootstraps each control log it then commits to.
    const { log: store } = await initJetStreamControlLog(transport.connection, { region: `${d.controller.region}-${volume}` });
    const dv = deploymentOfVolume(d, volume);
    const controller = await startController({ controllerId: d.controller.id, region: d.controller.region, topology: topologyOf(dv, volume), evalIntervalMs: 50 }, { transport, clock: systemClock, store });
    await controller.core.bootstrap(
      dv.holders.map((h) => {
        const s = sites[h.site]!;
        return { holderId: h.id, incarnation: 1, publicKey: holderPublicRaw(km, h.id), failureDomain: `${s.region}/${s.az}/${h.site}-host` };
      }),
      dv.holders.map((h) => h.id),
    );
    controllers.set(volume, controller);
  }
  const of = (a: Record<string, unknown>) => controllers.get(String(a["volume"] ?? d.volume))!;
  // The status document plus, per holder, the ranges its verified receipts show it retaining.
  const view = (volume: string) => {
    const c = controllers.get(volume)!;
    const receipted: Record<string, [number, number][]> = {};
    for (const h of c.core.ledger.holdings({ volume, lane: d.lane })) receipted[h.holderId] = h.retained.toJSON();
    return { status: c.core.status ?? null, receipted };
  };
  return {
    handlers: {
      status: (a) => view(String(a["volume"] ?? d.volume)),
      // A fresh evaluation (newer than now), for a prediction taken at a known moment.
      evaluate: async (a) => {
        const c = of(a);
        const before = c.core.status?.asOfMs ?? 0;
        const deadline = Date.now() + 5000;
        c.evaluateSoon();
        while ((c.core.status?.asOfMs ?? 0) <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        return view(String(a["volume"] ?? d.volume));
      },
    },
    async stop() {
      for (const c of controllers.values()) c.stop();
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

import { z } from "zod";
import { CustodyError } from "../../core/index.ts";
import { metricsSchema } from "../../actors/runtime/index.ts";
import { coalescedSectionSchema } from "./coalesced-section.ts";

/**
 * The deployment file `custody init` reads: NATS regions, sites, holders, volumes (each with its
 * writer), controllers and base builders. Every object is strict, so a typo is an error naming
 * its path instead of a silently different deployment. Cross-references (a holder's site, a
 * lane's first hops, ...) are checked by `parseDeployment` (deployment-check.ts) after the shape.
 */

/** Thrown for a deployment file that does not parse or does not hold together; `detail.path` names the key. */
export class DeploymentError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_deployment", message, detail);
  }
}

/** Ids become file names, NATS subject tokens and JetStream names: keep them to a safe alphabet. */
const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, "letters, digits, '-' and '_' only");
const port = z.number().int().min(1).max(65535);
const absolutePath = z.string().regex(/^\//, "an absolute path");

/** A role's metrics (Prometheus endpoint and/or OTLP push): the role config's own schema. */
const metrics = metricsSchema;

/** One NATS region: a server (one-server cluster) joined to every other region by a gateway. */
const regionSchema = z.strictObject({
  /** Address clients and the other regions' gateways use to reach this region's server. */
  host: z.string().min(1),
  /** Address the server binds to (default: `host`). */
  listen: z.string().min(1).optional(),
  port,
  /** Monitoring port (`/healthz`, `/varz`, ...). */
  httpPort: port,
  clusterPort: port,
  gatewayPort: port,
  /** JetStream storage directory on the server's machine. */
  jetstreamDir: absolutePath,
  /**
   * The region's replica server of the control log (see policies/deploy/control-servers.ts), when the log
   * is replicated. Omitted: the region's ports + 1 each, and `<jetstreamDir>-control`.
   */
  controlServer: z
    .strictObject({ port, httpPort: port, clusterPort: port, gatewayPort: port, jetstreamDir: absolutePath })
    .optional(),
});

/** A failure domain position: the region, AZ and host a role or a recovery destination sits on. */
const siteSchema = z.strictObject({
  region: z.string().min(1),
  az: z.string().min(1),
  host: z.string().min(1),
  deps: z.array(z.string().min(1)).optional(),
});

/** One lane a holder serves: who sends to it and whom it forwards to. */
const holderLaneSchema = z.strictObject({
  volume: id,
  lane: id,
  upstream: z.array(id).min(1),
  downstream: z.array(id).default([]),
});

const holderSchema = z.strictObject({
  id,
  site: id,
  /** NATS region the holder connects to. */
  region: id,
  /** `disk`: RAM and a spill file made durable; `ram`: RAM only. */
  residency: z.enum(["ram", "disk"]),
  /** May be empty for a holder that only serves a volume's coalesced stream (`volumes[].coalesced.holders`). */
  lanes: z.array(holderLaneSchema),
  metrics,
  /** Holder configuration keys that replace the defaults (arena, flush, receipts, ...); validated by the holder. */
  overrides: z.record(z.string(), z.unknown()).optional(),
  /**
   * On SIGTERM, how long the holder waits for what only its RAM holds to be flushed or released (ms;
   * role default 10000).
   */
  drainDeadlineMs: z.number().int().nonnegative().optional(),
  /**
   * A standby: its process runs from the start, but the bootstrap does not admit it and no lane
   * sends to it. The volume's controller brings it in (`repair.standby`, keyed with the key issued
   * here) when a loss leaves a required scenario without a holder to copy to.
   */
  standby: z.boolean().optional(),
});

const workloadSchema = z.strictObject({
  intervalMs: z.number().int().nonnegative(),
  ackLog: z.string().min(1).optional(),
  depth: z.number().int().positive().optional(),
  inFlight: z.number().int().positive().max(256).optional(),
  ratePerSec: z.number().positive().optional(),
  blocksPerWrite: z.number().int().positive().max(256).optional(),
  /**
   * Stop writing once this many writes of a start were acknowledged (the role config's `count`,
   * documented in docs/deploy.md).
   */
  count: z.number().int().positive().optional(),
});

const lossSchema = z.strictObject({
  domain: z.string().min(1),
  kind: z.enum(["partition", "crash", "power_loss", "site_destruction"]),
});
/**
 * `destination`: the site this scenario recovers to when it is not the volume's `recoverySite` (e.g. a
 * scenario that loses that site).
 */
const scenarioSchema = z.strictObject({
  name: z.string().min(1),
  losses: z.array(lossSchema).min(1),
  deadlineSec: z.number().positive(),
  required: z.boolean(),
  destination: id.optional(),
});
/** Losses one after another (e.g. a second region during the first one's replay), evaluated like a scenario. */
const timelineSchema = z.strictObject({
  name: z.string().min(1),
  minIntervalSec: z.number().nonnegative(),
  deadlineSec: z.number().positive(),
  required: z.boolean(),
  events: z.array(z.strictObject({ afterSec: z.number().nonnegative(), losses: z.array(lossSchema).min(1) })).min(1),
});

/**
 * One shaped leg between two sites (either direction): a test and demo facility that makes
 * geography visible on one machine. Units a holder or writer sends to a holder at the other site
 * are held back by the latency, jitter and serialization time (the role configs' `links`), and the
 * controllers' recovery estimate sees the leg's bandwidth instead of `network.bandwidthBytesPerSec`.
 */
const shapedLinkSchema = z.strictObject({
  from: id,
  to: id,
  latencyMs: z.number().nonnegative(),
  jitterMs: z.number().nonnegative().optional(),
  bandwidthMBps: z.number().positive(),
});

const volumeSchema = z.strictObject({
  id,
  blockCount: z.number().int().positive(),
  walCapacity: z.number().int().positive().optional(),
  writer: z.strictObject({
    id,
    site: id,
    region: id,
    metrics,
    /** A synthetic workload (see `custody run writer`); omit for a writer driven by its application. */
    workload: workloadSchema.optional(),
    drainDeadlineMs: z.number().int().nonnegative().optional(),
  }),
  /** The volume's lanes; default one lane `l0` over every block, sent to every holder the writer feeds. */
  lanes: z
    .array(
      z.strictObject({
        lane: id,
        fromLba: z.number().int().nonnegative(),
        toLba: z.number().int().nonnegative(),
        firstHops: z.array(id).min(1),
      }),
    )
    .optional(),
  /** Site a lost volume is recovered to; the data key's authority is there. */
  recoverySite: id,
  /**
   * Sites where an authority for the volume's data key sits (an escrowed copy): a scenario keeps
   * the key while one of them survives. Default: the recovery site alone.
   */
  keyAuthorities: z.array(id).min(1).optional(),
  /**
   * Holders that keep the empty genesis base (the volume before its first write); default the volume's
   * disk holders.
   */
  genesisBases: z.array(id).optional(),
  /** The contract; default: each of the volume's holders' hosts crashing, all required, 3600 s deadline. */
  scenarios: z.array(scenarioSchema).optional(),
  /** Sequential losses the controllers evaluate too (default none). */
  timelines: z.array(timelineSchema).optional(),
  /** The fixed steps of a recovery in the controllers' RTO estimate, seconds each (default 1 s each). */
  recoverySteps: z
    .strictObject({
      detectSec: z.number().nonnegative(),
      authorizeSec: z.number().nonnegative(),
      acquireCapacitySec: z.number().nonnegative(),
      persistSec: z.number().nonnegative(),
      validateSec: z.number().nonnegative(),
    })
    .optional(),
  /** Holders that shed custody once the policy allows; default the RAM-only holders. */
  releasable: z.array(id).optional(),
  /**
   * The controller names which of the volume's disk holders persist each lane (enough for `copies`
   * persisted copies, default 1, in every required scenario no RAM copy survives); omitted: every
   * disk holder flushes everything.
   */
  persistenceTargets: z.strictObject({ copies: z.number().int().min(1).max(16).optional() }).optional(),
  /**
   * A coalesced stream beside the raw lanes (issue #22): its holders get a derived lane per raw lane
   * (see deployment-coalesced.ts).
   */
  coalesced: coalescedSectionSchema.optional(),
});

const controllerSchema = z.strictObject({
  id,
  volume: id,
  region: id,
  metrics,
  evalIntervalMs: z.number().int().positive().optional(),
  admission: z.enum(["key-continuity", "operator"]).optional(),
  staleAfterMs: z.number().int().positive().optional(),
  coverageRepair: z
    .strictObject({
      graceMs: z.number().int().nonnegative().optional(),
      retryMs: z.number().int().positive().optional(),
      checkMs: z.number().int().positive().optional(),
    })
    .optional(),
  /**
   * How its verdicts read over time (ms; docs/policies.md, "Verdicts over time"): a write is in
   * flight, not lost, for `receiptDeadlineMs` after its commit; lost writes beyond the allowance
   * turn a verdict to not met after `graceMs`. Default 2 000 / 2 000.
   */
  verdict: z
    .strictObject({
      receiptDeadlineMs: z.number().int().positive().optional(),
      graceMs: z.number().int().nonnegative().optional(),
    })
    .optional(),
  /**
   * Control-lease timings (ms; see docs/deploy.md). A volume named by several controllers gets a
   * lease: one is active at a time and the others are standbys that take over when it falls
   * silent for `timeoutMs`. Default 3 000 / 10 000 / 1 000 (a takeover within about 11 s).
   */
  lease: z
    .strictObject({
      renewMs: z.number().int().positive().optional(),
      timeoutMs: z.number().int().positive().optional(),
      checkMs: z.number().int().positive().optional(),
    })
    .optional(),
});

const baseBuilderSchema = z.strictObject({
  holder: id,
  volume: id,
  lane: id,
  metrics,
  intervalMs: z.number().int().positive(),
  minNewSeqs: z.number().int().positive(),
  maxSeqsPerBuild: z.number().int().positive().optional(),
  /** A build running longer is abandoned and counted (`base_build_timeout`); default 600000 ms. */
  buildTimeoutMs: z.number().int().positive().optional(),
});

/** The whole deployment file. */
export const deploymentSchema = z.strictObject({
  /**
   * `tls-nkeys` (default): every role and the operator log in with their own nkey user and the
   * permissions derived for them, over TLS to servers certified by the deployment's own CA; routes
   * and gateways verify their peers. `none`: open servers, anonymous roles (unit tests only).
   */
  security: z.enum(["tls-nkeys", "none"]).default("tls-nkeys"),
  /** Name of the control log (JetStream stream `CUSTODY_CTRL_<controlRegion>`) every role follows. */
  controlRegion: id,
  /**
   * How many copies of the control log: 3 (the default with 3 regions or more) on a dedicated
   * 3-server JetStream cluster, one server in each of 3 regions; 1 (the default, and the only
   * choice, with fewer regions) on the server the bootstrap reaches. See policies/deploy/control-servers.ts.
   */
  controlLog: z.strictObject({ replicas: z.union([z.literal(1), z.literal(3)]) }).optional(),
  /**
   * Where the files land on the machines. Omitted: under the `--out` directory itself (one
   * machine, tests); on separate machines e.g. `/etc/custody` and `/var/lib/custody`.
   */
  paths: z
    .strictObject({
      configDir: absolutePath.optional(),
      stateDir: absolutePath.optional(),
      /** Every holder, writer and controller writes its spans to `<spanDir>/<id>.jsonl` (role configs' `spanFile`). */
      spanDir: absolutePath.optional(),
    })
    .optional(),
  regions: z.record(id, regionSchema),
  sites: z.record(id, siteSchema),
  /**
   * The network between sites as the controller's recovery-time estimate sees it: every pair of
   * sites linked at `bandwidthBytesPerSec` (a site without a path to the recovery site makes its
   * data unrecoverable in the estimate).
   */
  network: z.strictObject({
    bandwidthBytesPerSec: z.number().positive(),
    /** Shaped legs between sites (test/demo facility, see `shapedLinkSchema`); default none. */
    shapedLinks: z.array(shapedLinkSchema).optional(),
  }),
  holders: z.array(holderSchema).min(1),
  volumes: z.array(volumeSchema).min(1),
  controllers: z.array(controllerSchema).default([]),
  baseBuilders: z.array(baseBuilderSchema).default([]),
});
export type Deployment = z.infer<typeof deploymentSchema>;
export type DeploymentHolder = Deployment["holders"][number];
export type DeploymentVolume = Deployment["volumes"][number];
export type DeploymentRegion = Deployment["regions"][string];

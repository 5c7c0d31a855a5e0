import { readFileSync } from "node:fs";
import { z } from "zod";
import { CustodyError, issueText, reportedIssue } from "../../core/index.ts";
import { linksSchema } from "./role-links.ts";
import { probeSchema } from "./route-probe-config.ts";
import { spanFileSchema } from "./role-tracing.ts";

/**
 * Configuration files of the roles a process can run (`custody run <role> --config FILE`). Every
 * object is strict: an unknown key is an error naming its path, so a typo never silently changes
 * behaviour. The role's own settings are validated again by the role (holder config, ...).
 */

/** Thrown for an unreadable or invalid role configuration; `detail.path` names the offending key. */
export class RoleConfigError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("invalid_role_config", message, detail);
  }
}

/** The `nats` section of a role config (also the operator's connection file `custody init` writes). */
export const natsRoleSchema = z.strictObject({
  /** One URL or several of the same cluster. */
  servers: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  /**
   * Reconnect attempts before the connection is closed for good and the process exits (2); -1 = forever. Default 60.
   */
  maxReconnectAttempts: z.number().int().min(-1).optional(),
  /** Wait between reconnect attempts (ms). Default 2000. */
  reconnectTimeWaitMs: z.number().int().positive().optional(),
  /**
   * Who this process is on a secured bus: its nkey user seed file (mode 0600, see
   * transport/security/nkey-seed.ts) and the inbox prefix its permissions allow (`inboxPrefixFor(role, id)`).
   * Absent: the connection is anonymous (unsecured servers only, e.g. unit tests).
   */
  credentials: z
    .strictObject({
      nkeySeedFile: z.string().min(1),
      inboxPrefix: z.string().min(1).optional(),
    })
    .optional(),
  /** Require TLS and trust only this CA certificate (PEM) for the server's certificate. */
  tls: z.strictObject({ caFile: z.string().min(1) }).optional(),
});
export type NatsRoleConfig = z.infer<typeof natsRoleSchema>;

/**
 * A signed control log (see custody/control-trust.ts): the operators whose keys every reader
 * trusts (raw Ed25519 public keys, 64 hex digits in each file), and — for a controller — the
 * PKCS#8 key it signs its commits with (mode 0600). Without this section the log is read unsigned.
 */
const controlTrustSchema = z
  .strictObject({
    operators: z.array(z.strictObject({ id: z.string().min(1), publicKeyFile: z.string().min(1) })).min(1),
    signingKeyFile: z.string().min(1).optional(),
  })
  .optional();
export type ControlTrustConfig = NonNullable<z.infer<typeof controlTrustSchema>>;

/**
 * Optional metrics of a role process: a Prometheus endpoint `http://<host>:<port>/metrics` (host
 * defaults to 127.0.0.1) and/or an OTLP/HTTP push to a collector's metrics URL; at least one of the two.
 */
export const metricsSchema = z
  .strictObject({
    port: z.number().int().min(1).max(65535).optional(),
    host: z.string().min(1).optional(),
    otlp: z
      .strictObject({
        url: z.url({ protocol: /^https?$/ }),
        intervalMs: z.number().int().min(100).max(3_600_000).optional(),
      })
      .optional(),
  })
  .refine((m) => m.port !== undefined || m.otlp !== undefined, {
    message: "metrics needs a port (Prometheus endpoint) or otlp (push), or both",
  })
  .optional();
/** A role's metrics section (Prometheus endpoint and/or OTLP push). */
export type MetricsConfig = NonNullable<z.infer<typeof metricsSchema>>;

/** A holder process: where its state lives, its signing key, its control log, and the holder itself. */
export const holderRoleSchema = z.strictObject({
  role: z.literal("holder"),
  nats: natsRoleSchema,
  metrics: metricsSchema,
  controlTrust: controlTrustSchema,
  /** Link shaping of the units it forwards (test/demo facility, see actors/runtime/role-links.ts). */
  links: linksSchema,
  /** Measured routes: answer probes, probe its edges, publish measurements (actors/runtime/route-probe-config.ts). */
  probe: probeSchema,
  /** Where its spans go, as JSON lines (see actors/runtime/role-tracing.ts). */
  spanFile: spanFileSchema,
  /** Region of the control log (JetStream stream `CUSTODY_CTRL_<region>`) the holder follows. */
  controlRegion: z.string().min(1),
  /** The holder's state directory: its incarnation, and its spill stream when it persists. */
  stateDir: z.string().min(1),
  /** PKCS#8 DER Ed25519 private key (mode 0600), the same for every incarnation. */
  keyFile: z.string().min(1),
  /** The holder configuration (see actors/holder/holder-config.ts); validated by the holder. */
  holder: z.record(z.string(), z.unknown()),
  /**
   * The writer keys the key authority named for the holder's volumes (raw Ed25519 public keys in
   * hex, each from `fromTerm` on). With them the holder admits only units the writer attested;
   * without them (unsecured deployments) units are not checked.
   */
  writerKeys: z
    .array(
      z.strictObject({
        volume: z.string().min(1),
        fromTerm: z.number().int().nonnegative(),
        publicKey: z.string().regex(/^[0-9a-f]{64}$/),
      }),
    )
    .optional(),
  /**
   * On SIGTERM, how long to wait (ms, default 10000) for what the holder keeps only in RAM to be
   * flushed to its spill stream or released by the control log, after it stopped granting credit.
   */
  drainDeadlineMs: z.number().int().nonnegative().optional(),
});
export type HolderRoleConfig = z.infer<typeof holderRoleSchema>;

/** Reads and validates a role configuration file. Throws RoleConfigError naming the first bad key. */
export function readRoleConfig<T>(file: string, schema: z.ZodType<T>): T {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new RoleConfigError(`cannot read config ${file}: ${(err as Error).message}`, { file });
  }
  const r = schema.safeParse(raw);
  if (!r.success) {
    const issue = reportedIssue(r.error.issues);
    throw new RoleConfigError(`invalid config ${file}: ${issueText(issue)}`, { file, path: issue.path.join(".") });
  }
  return r.data;
}

/**
 * Reads an operator's connection file (`operator/nats.json`, which `custody init` writes: the `nats`
 * section of a role config). Throws RoleConfigError `<file>: <why>` when it cannot be read or is invalid.
 */
export function readOperatorConfig(file: string): NatsRoleConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new RoleConfigError(`${file}: ${(err as Error).message}`, { file });
  }
  const r = natsRoleSchema.safeParse(raw);
  if (!r.success) {
    const issue = reportedIssue(r.error.issues);
    throw new RoleConfigError(`${file}: ${issueText(issue)}`, { file, path: issue.path.join(".") });
  }
  return r.data;
}

/**
 * A volume writer process: its state directory (volume, outbox, term), data key, and an optional synthetic workload.
 */
export const writerRoleSchema = z.strictObject({
  role: z.literal("writer"),
  nats: natsRoleSchema,
  metrics: metricsSchema,
  controlTrust: controlTrustSchema,
  /** Link shaping of the units it ships (test/demo facility, see actors/runtime/role-links.ts). */
  links: linksSchema,
  /** Measured routes: probe its first hops, publish measurements (actors/runtime/route-probe-config.ts). */
  probe: probeSchema,
  /** Where its spans go, as JSON lines (see actors/runtime/role-tracing.ts). */
  spanFile: spanFileSchema,
  controlRegion: z.string().min(1),
  /** Holds the SmartWAL volume (`volume/`), the outbox (`outbox/`) and the term. */
  stateDir: z.string().min(1),
  /** The volume's 32-byte data key (from the key authority), mode 0600. */
  dataKeyFile: z.string().min(1),
  /**
   * Sign every unit with the writer key derived from the data key (custody/unit-signer.ts), which
   * the holders are given as the volume's writer key. Off (unsecured deployments): units go unsigned.
   */
  signUnits: z.boolean().optional(),
  volume: z.strictObject({
    blockCount: z.number().int().positive(),
    walCapacity: z.number().int().positive().optional(),
  }),
  /** The writer configuration without `term` and lanes' `firstSeq` (both derived from durable state). */
  writer: z.record(z.string(), z.unknown()),
  /**
   * Replicas that may catch up from this writer's volume: its catch-up service answers them on
   * `custody.v1.replica-catchup.<volume>.<replica>` (actors/replica/primary-catch-up-service.ts); any other is refused.
   */
  replicas: z.array(z.string().min(1)).optional(),
  /**
   * A synthetic workload (chaos runs, soak, the demo): write every `intervalMs` (with `inFlight`:
   * issue a write every `intervalMs`), sync, and append one JSON line per acknowledged write to
   * `ackLog` (`{"i","lsn","lba","seq"}`); write `i` holds `workloadWrite(i, blocksPerWrite, blockCount)` (one block:
   * block `i` holds `workloadBlock(i)`).
   * Each write is a `writer.write` span (with its LBA, LSN and lane sequence) when spans are exported.
   */
  workload: z
    .strictObject({
      intervalMs: z.number().int().nonnegative(),
      /** Where acknowledged writes are logged (optional: a long soak does not keep them). */
      ackLog: z.string().min(1).optional(),
      /** Writes issued together before each sync (queue depth), round after round. Default 1. */
      depth: z.number().int().positive().optional(),
      /**
       * Instead of rounds: keep this many writes in flight, each acknowledged (and logged, in write
       * order) after its own local sync; the next is issued as soon as one is acknowledged, so the
       * volume's group commit and one outbox flush serve many writes (actors/runtime/workload-loop.ts).
       */
      inFlight: z.number().int().positive().max(256).optional(),
      /** Pace the workload to about this many writes per second (instead of `intervalMs` between rounds). */
      ratePerSec: z.number().positive().optional(),
      /**
       * Blocks per write (default 1): write `i` covers the `i`-th `blocksPerWrite`-wide slot, round and round (see
       * actors/runtime/workload.ts).
       */
      blocksPerWrite: z.number().int().positive().max(256).optional(),
      /**
       * Acknowledge (and log) a write only once a sync under this contract of the writer proved it
       * protected (waiting at most `timeoutMs`, default 30000, per sync; a sync that times out
       * acknowledges none of its writes), instead of after the local sync alone. It must be one of `writer.contracts`.
       */
      contract: z
        .strictObject({ name: z.string().min(1), timeoutMs: z.number().int().positive().optional() })
        .optional(),
      /** Stop writing once this many writes (counted from this start) were acknowledged; the process keeps running. */
      count: z.number().int().positive().optional(),
    })
    .refine((w) => w.inFlight === undefined || w.depth === undefined, {
      message: "workload: give depth (rounds) or inFlight (a window of writes), not both",
    })
    .optional(),
  /** On SIGTERM, how long to wait for custody to take everything the writer retains (ms, default 30000). */
  drainDeadlineMs: z.number().int().nonnegative().optional(),
});
export type WriterRoleConfig = z.infer<typeof writerRoleSchema>;

/** A controller process: the control log it commits to and its configuration. */
export const controllerRoleSchema = z.strictObject({
  role: z.literal("controller"),
  nats: natsRoleSchema,
  metrics: metricsSchema,
  controlTrust: controlTrustSchema,
  /** Where its spans go, as JSON lines (see actors/runtime/role-tracing.ts). */
  spanFile: spanFileSchema,
  /**
   * Region token of the control log it commits to (stream `CUSTODY_CTRL_<token>`); default the
   * controller's own `region`. Two controllers in one region (one per volume) each name their own.
   */
  controlLogRegion: z.string().min(1).optional(),
  /**
   * Where the controller keeps its state: the control-log head it last verified (position + hash).
   * With it, a restart refuses a log that regressed, forked or vanished since. Without it, nothing
   * survives a restart and only the running process notices such a log.
   */
  stateDir: z.string().min(1).optional(),
  /**
   * The controller configuration (see actors/controller/controller-config.ts); its `region` is the control-log region.
   */
  controller: z.record(z.string(), z.unknown()),
  /**
   * The volume has standby controllers: this one runs its job only while it holds the volume's
   * control lease (custody/control-lease.ts), claiming it when the holder is silent for `timeoutMs`.
   * Absent: it runs at once and never claims (a volume with one controller, as before leases).
   * Defaults: actors/controller/lease-step.ts.
   */
  lease: z
    .strictObject({
      renewMs: z.number().int().positive().optional(),
      timeoutMs: z.number().int().positive().optional(),
      checkMs: z.number().int().positive().optional(),
    })
    .refine(
      (l) => l.renewMs === undefined || l.timeoutMs === undefined || l.timeoutMs > l.renewMs,
      "timeoutMs must exceed renewMs",
    )
    .optional(),
});
export type ControllerRoleConfig = z.infer<typeof controllerRoleSchema>;

/** A base builder beside a store holder: it has the data key and turns the holder's WAL into rolling bases. */
export const baseBuilderRoleSchema = z.strictObject({
  role: z.literal("base-builder"),
  nats: natsRoleSchema,
  metrics: metricsSchema,
  controlTrust: controlTrustSchema,
  /** The store holder whose WAL it reads and whose receipts will name its bases. */
  holder: z.string().min(1),
  volume: z.string().min(1),
  lane: z.string().min(1),
  blockCount: z.number().int().positive(),
  /** Where the bases live (on the holder's host). */
  dir: z.string().min(1),
  dataKeyFile: z.string().min(1),
  /** How often to check for enough new WAL (ms). */
  intervalMs: z.number().int().positive(),
  /** Sequences of new WAL that make a new base worth building. */
  minNewSeqs: z.number().int().positive(),
  /** At most this many sequences per build (bounds memory). Default 4 × minNewSeqs. */
  maxSeqsPerBuild: z.number().int().positive().optional(),
  /**
   * A build running longer is abandoned and counted (base_build_timeout); the next starts afresh. Default 600000 (10
   * min).
   */
  buildTimeoutMs: z.number().int().positive().optional(),
});
export type BaseBuilderRoleConfig = z.infer<typeof baseBuilderRoleSchema>;

/**
 * A repair worker: it takes the repair tasks the controllers of `volumes` hand out (their
 * `repair.worker` is `remote`) and runs each, asking the controller over NATS for what it reads
 * and for the commits it needs.
 */
export const repairRoleSchema = z.strictObject({
  role: z.literal("repair"),
  nats: natsRoleSchema,
  metrics: metricsSchema,
  /** This worker's id (its connection name; on a secured bus, its repair principal). */
  workerId: z.string().min(1),
  volumes: z.array(z.string().min(1)).min(1),
  /** How long one request to a controller may take before the repair fails (ms). Default 10000. */
  requestTimeoutMs: z.number().int().positive().optional(),
});
export type RepairRoleConfig = z.infer<typeof repairRoleSchema>;

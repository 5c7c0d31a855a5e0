import { jetstreamManager } from "@nats-io/jetstream";
import { ControlLogFollower, leaseOf, type ControlLogStore } from "../../custody/index.ts";
import { controlStreamName, NatsTransport } from "../../transport/index.ts";
import { ControlPlaneTally } from "./control-plane-tally.ts";

/** How often the probe asks the control stream for its state (ms), and how long one ask may take. */
const PROBE_EVERY_MS = 250;
const PROBE_TIMEOUT_MS = 1_000;
/** How often the lease holder is read from the folded log (ms). */
const LEASE_EVERY_MS = 500;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A running watch of the control plane (see `watchControlPlane`). */
export interface ControlPlaneWatch {
  readonly tally: ControlPlaneTally;
  /** Stops probing; the figures up to now. */
  stop(): Promise<{ failovers: number; leaderChanges: number; holderChanges: number; maxUnavailableMs: number }>;
}

/**
 * Watches a replicated control log and its volume's lease during a chaos run:
 *
 * - the probe, a connection of its own to the control cluster's servers (`controlUrls`; a region
 *   server's restart or freeze is not the log's unavailability), asks `$JS.API.STREAM.INFO` of the
 *   control stream every 250 ms (1 s timeout). It answers only through an elected stream leader,
 *   which is what an append needs; it appends nothing, so the log is not polluted;
 * - the lease: `store` (the operator's reader) is folded every 500 ms and the volume's lease
 *   holder noted.
 *
 * Each change it sees (a new stream leader, a new lease holder) is told to `log`.
 */
export async function watchControlPlane(
  controlUrls: readonly string[],
  region: string,
  store: ControlLogStore,
  volume: string,
  log: (line: string) => void = () => undefined,
): Promise<ControlPlaneWatch> {
  const tally = new ControlPlaneTally();
  const probe = await NatsTransport.connect({
    servers: [...controlUrls],
    name: "chaos-control-probe",
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  const jsm = await jetstreamManager(probe.connection, { timeout: PROBE_TIMEOUT_MS });
  const stream = controlStreamName(region);
  const follower = new ControlLogFollower(store);
  let running = true;
  const probing = (async () => {
    while (running) {
      const asked = Date.now();
      try {
        const info = await jsm.streams.info(stream);
        const before = tally.streamLeader;
        tally.probe(Date.now(), true, info.cluster?.leader);
        if (tally.streamLeader !== before) log(`stream leader: ${tally.streamLeader} (was ${before ?? "none seen"})`);
      } catch {
        tally.probe(Date.now(), false);
      }
      await sleep(Math.max(0, asked + PROBE_EVERY_MS - Date.now()));
    }
  })();
  const following = (async () => {
    while (running) {
      try {
        const before = tally.activeController;
        tally.leaseHolder(leaseOf(await follower.refresh(), volume)?.holder);
        if (tally.activeController !== before)
          log(`lease holder: ${tally.activeController} (was ${before ?? "none seen"})`);
      } catch {
        // the log is unavailable right now (the probe measures that); read again next time
      }
      await sleep(LEASE_EVERY_MS);
    }
  })();
  return {
    tally,
    async stop() {
      running = false;
      await Promise.all([probing, following]);
      await probe.close();
      const end = Date.now();
      return {
        failovers: tally.failovers,
        leaderChanges: tally.leaderChanges,
        holderChanges: tally.holderChanges,
        maxUnavailableMs: tally.maxUnavailableMs(end),
      };
    },
  };
}

/**
 * What the demo reads from the running deployment, over NATS as the deployment's operator: each
 * holder's retained ranges (its process stats), each controller's receipted ranges (its process
 * stats, see actors/runtime/custody-ranges.ts) and every volume's status documents (the controller's
 * evaluation: the prediction). The same subjects `custody ps` and `custody status` read.
 */
import { laneKey } from "../../actors/index.ts";
import { volumeStatusSpec, type VolumeStatus } from "../../transport/protocol/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import { decodeMessage, statusSubject } from "../../transport/protocol/index.ts";
import { gatherProcessStats, type NatsRoleConfig, type ProcessStats } from "../../actors/runtime/index.ts";
import { receiptedKey, runsOf } from "../../actors/runtime/index.ts";
import { connectRole } from "../../actors/runtime/index.ts";
import type { NatsTransport, TransportSubscription } from "../../transport/index.ts";
import type { ControllerView, HolderStats } from "./holder-stats.ts";

/** How long one stats ask gathers answers (every live process answers well within it). */
const STATS_WAIT_MS = 400;
const CONNECT_ATTEMPTS = 5;

/** The operator's connection and the newest status document of each volume. */
export class OperatorView {
  private readonly latest = new Map<string, VolumeStatus>();
  private readonly subs: TransportSubscription[] = [];
  private closed = false;

  private constructor(
    readonly transport: NatsTransport,
    private readonly lane: string,
    /** Bytes one lane sequence carries (one workload write). */
    private readonly seqBytes: number,
  ) {}

  /** Connects as `nats` (the operator's `nats.json`) and follows the status documents of `volumes`. */
  static async open(
    nats: NatsRoleConfig,
    volumes: readonly string[],
    lane: string,
    seqBytes: number,
  ): Promise<OperatorView> {
    // A TLS handshake on a loaded machine can outlast one connect attempt: try a few times.
    let transport: NatsTransport | undefined;
    for (let attempt = 1; transport === undefined; attempt++) {
      try {
        transport = (await connectRole({ ...nats, maxReconnectAttempts: -1, reconnectTimeWaitMs: 250 }, "custody-demo"))
          .transport;
      } catch (err) {
        if (attempt >= CONNECT_ATTEMPTS) throw err;
      }
    }
    const view = new OperatorView(transport, lane, seqBytes);
    for (const v of volumes)
      view.subs.push(
        transport.subscribe(statusSubject(v), (m) => {
          try {
            const doc = decodeMessage(volumeStatusSpec, m.data);
            if ((view.latest.get(v)?.asOfMs ?? -1) <= doc.asOfMs) view.latest.set(v, doc);
          } catch {
            // a malformed document is skipped; the next one may be good
          }
        }),
      );
    return view;
  }

  /** The newest status document of `volume` seen so far. */
  status(volume: string): VolumeStatus | undefined {
    return this.latest.get(volume);
  }

  /**
   * The newest status document of `volume` evaluated at or after `sinceMs`, waiting up to
   * `waitMs` for one; after that the newest there is. A controller evaluates whenever its ledger
   * changed (within its interval), so a quiet one's newest document already reflects its ledger.
   */
  async statusSince(volume: string, sinceMs: number, waitMs: number): Promise<VolumeStatus | undefined> {
    const until = Date.now() + waitMs;
    while ((this.latest.get(volume)?.asOfMs ?? -1) < sinceMs && Date.now() < until)
      await new Promise((r) => setTimeout(r, 25));
    return this.latest.get(volume);
  }

  /** Process stats of every live process of `role`, by id. */
  async stats(role: string): Promise<Map<string, ProcessStats>> {
    const { stats } = await gatherProcessStats(this.transport.connection, { role, waitMs: STATS_WAIT_MS });
    return new Map(stats.map((s) => [s.id, s]));
  }

  /** Every live holder's retained ranges of `volumes`, as the settle rule reads them. */
  async holders(volumes: readonly string[]): Promise<Map<string, HolderStats>> {
    const out = new Map<string, HolderStats>();
    for (const [id, s] of await this.stats("holder")) {
      const per: Record<string, { retained: [number, number][]; bytes: number; reach: number }> = {};
      for (const v of volumes) {
        const key = laneKey(v, this.lane);
        const retained = RangeSet.fromJSON(runsOf(s.samples?.[`${key}.retained`] as number[] | undefined));
        // How far it got: a RAM holder may already have released what it held.
        per[v] = {
          retained: retained.toJSON(),
          bytes: retained.count * this.seqBytes,
          reach: Math.max(retained.max ?? 0, s.figures[`${key}.releasedMax`] ?? 0),
        };
      }
      out.set(id, { volumes: per, inFlight: s.figures["linkInFlight"] ?? 0, captured: [] });
    }
    return out;
  }

  /** Each volume's controller's receipted ranges per holder (`controllerOf(volume)` names its process). */
  async receipted(
    volumes: readonly string[],
    holders: readonly string[],
    controllerOf: (volume: string) => string,
  ): Promise<Record<string, ControllerView | undefined>> {
    const controllers = await this.stats("controller");
    const out: Record<string, ControllerView | undefined> = {};
    for (const v of volumes) {
      const s = controllers.get(controllerOf(v));
      out[v] =
        s === undefined
          ? undefined
          : {
              status: this.status(v) ?? null,
              receipted: Object.fromEntries(
                holders.map((h) => [
                  h,
                  RangeSet.fromJSON(runsOf(s.samples?.[receiptedKey(h, this.lane)] as number[] | undefined)).toJSON(),
                ]),
              ),
            };
    }
    return out;
  }

  /** Unsubscribes and closes the connection (once). */
  async close(): Promise<void> {
    const subs = this.subs.splice(0);
    if (subs.length === 0 && this.closed) return;
    this.closed = true;
    for (const s of subs) s.unsubscribe();
    await this.transport.close();
  }
}

import type { Clock, Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { failureDomainOf, readAdmissionRequest, type AdmissionRequest } from "../../custody/index.ts";
import type { Site } from "../../policies/index.ts";
import { admitSubject } from "../../transport/protocol/index.ts";
import type { Transport, TransportSubscription } from "../../transport/index.ts";
import type { StandbyHolder } from "./controller-config.ts";
import type { HolderAdmission, RepairLauncher } from "./controller-ports.ts";

/** Why a standby could not be brought in; `code` is one of the `standby_*` codes below. */
export class StandbyUnavailableError extends CustodyError {}

/** Settings of {@link AnnouncedStandbys}. */
export interface AnnouncedStandbysDeps {
  readonly transport: Transport;
  readonly clock: Clock;
  readonly counters: Counters;
  readonly standby: readonly StandbyHolder[];
  /** The topology's sites: a standby's announced failure domain must be its configured site's. */
  readonly sites: readonly Site[];
  /** How long `prepare` waits for an announcement it has not heard yet (ms). Default 5000. */
  readonly waitMs?: number;
  /**
   * An announcement older than this is not taken (ms; default 5000): a standby process asks every
   * half second while it runs, so a silent one has probably died since.
   */
  readonly freshMs?: number;
}

/**
 * The production repair launcher: standby holders run as their own processes from the start
 * (`custody run holder` with a config the bootstrap never admitted), and each keeps asking to be
 * admitted — a signed admission request on `custody.v1.admit.<holder>` every half second. This
 * listens to those requests for the configured standbys and, when the controller needs one, hands
 * back the newest request as the admission to commit — only when it is signed by the key the
 * deployment issued for that standby (`repair.standby[].publicKey`) and names the failure domain
 * of its configured site. Anything else on those subjects is counted and ignored: a process on the
 * bus cannot pose as a standby. A standby without a configured key is never taken.
 */
export class AnnouncedStandbys implements RepairLauncher {
  private readonly heard = new Map<string, { req: AdmissionRequest; at: number }>();
  private readonly waiting = new Map<string, (() => void)[]>();
  private readonly subs: TransportSubscription[];

  constructor(private readonly d: AnnouncedStandbysDeps) {
    this.subs = d.standby.map((s) => d.transport.subscribe(admitSubject(s.holderId), (msg) => this.hear(s, msg.data)));
  }

  /** The newest acceptable admission request of `standby`, waiting up to `waitMs` for one. */
  async prepare(standby: StandbyHolder): Promise<HolderAdmission> {
    if (standby.publicKey === undefined) {
      throw new StandbyUnavailableError(
        "standby_key_unknown",
        `standby ${standby.holderId} has no publicKey in repair.standby: ` +
          "the controller takes no standby whose key the deployment did not name",
        { holderId: standby.holderId },
      );
    }
    if (!this.freshlyHeard(standby.holderId)) {
      this.heard.delete(standby.holderId);
      await this.announcement(standby.holderId, this.d.waitMs ?? 5_000);
    }
    const h = this.heard.get(standby.holderId);
    if (h === undefined || !this.freshlyHeard(standby.holderId)) {
      this.d.counters.inc("standby_not_announced");
      throw new StandbyUnavailableError(
        "standby_not_announced",
        `standby ${standby.holderId} did not ask to be admitted within ${this.d.waitMs ?? 5_000} ms: ` +
          "is its process running?",
        { holderId: standby.holderId },
      );
    }
    const { holderId, incarnation, publicKey, failureDomain } = h.req;
    return { holderId, incarnation, publicKey, failureDomain };
  }

  stop(): void {
    for (const s of this.subs) s.unsubscribe();
    for (const wake of [...this.waiting.values()].flat()) wake();
    this.waiting.clear();
  }

  private freshlyHeard(holderId: string): boolean {
    const h = this.heard.get(holderId);
    return h !== undefined && this.d.clock.now() - h.at <= (this.d.freshMs ?? 5_000);
  }

  private hear(standby: StandbyHolder, data: Uint8Array): void {
    let req: AdmissionRequest;
    try {
      req = readAdmissionRequest(data);
    } catch (err) {
      this.d.counters.inc(`standby_${err instanceof CustodyError ? err.code : "malformed"}`);
      return;
    }
    const site = this.d.sites.find((s) => s.id === standby.site);
    if (req.holderId !== standby.holderId) return this.d.counters.inc("standby_wrong_subject");
    if (
      standby.publicKey === undefined ||
      Buffer.from(req.publicKey).toString("hex") !== standby.publicKey.toLowerCase()
    )
      return this.d.counters.inc("standby_key_mismatch");
    if (site === undefined || req.failureDomain !== failureDomainOf(site))
      return this.d.counters.inc("standby_domain_mismatch");
    const prev = this.heard.get(req.holderId);
    // A restarted standby asks with a higher incarnation; an older request arriving late changes nothing.
    if (prev !== undefined && prev.req.incarnation > req.incarnation) return;
    this.heard.set(req.holderId, { req, at: this.d.clock.now() });
    for (const wake of this.waiting.get(req.holderId) ?? []) wake();
    this.waiting.delete(req.holderId);
  }

  private announcement(holderId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.d.clock.clearTimeout(timer);
        resolve();
      };
      // A wait that timed out leaves nothing behind: a standby that is down for a month is asked about every few
      // seconds.
      const timer = this.d.clock.setTimeout(() => {
        const left = (this.waiting.get(holderId) ?? []).filter((w) => w !== wake);
        if (left.length === 0) this.waiting.delete(holderId);
        else this.waiting.set(holderId, left);
        resolve();
      }, ms);
      this.waiting.set(holderId, [...(this.waiting.get(holderId) ?? []), wake]);
    });
  }
}

import { RangeSet } from "../../lanes/index.ts";
import {
  decodeMessage,
  encodeMessage,
  RepairOp,
  repairActivateSpec,
  repairAdmitSpec,
  repairAnswerSpec,
  repairProtectSpec,
  repairRequestsOfVolume,
  repairUnprotectSpec,
  repairViewRequestSpec,
  repairViewSpec,
} from "../../transport/protocol/index.ts";
import type { InboundMessage, Transport, TransportSubscription } from "../../transport/index.ts";
import type { RepairPort } from "../repair/index.ts";
import { viewToWire } from "../repair/index.ts";
import {
  checkRepairRequest,
  RepairRequestRefusedError,
  type DelegatedRepair,
  type RepairRequest,
} from "./repair-request-check.ts";

/**
 * The controller's side of the repair protocol: it answers the requests of the repairs it handed to
 * a worker on `custody.v1.repair.<volume>.<op>`, with the same reads and commits its own child
 * repairs make in-process (`port`), after `checkRepairRequest`. The machine's step answers and
 * counts each request (controller-requests.ts); a refused or malformed one changes nothing.
 */
export class RepairService {
  private readonly open = new Map<string, DelegatedRepair>();

  constructor(
    private readonly d: {
      readonly volume: string;
      readonly transport: Transport;
      readonly port: RepairPort;
    },
  ) {}

  /** Subscribes the volume's repair requests; each is handed to `deliver` (the controller machine). */
  subscribe(deliver: (msg: InboundMessage) => void): TransportSubscription {
    return this.d.transport.subscribe(repairRequestsOfVolume(this.d.volume), deliver);
  }

  /** Requests for `r` are answered from now on. */
  openRepair(r: DelegatedRepair): void {
    this.open.set(r.repairId, r);
  }

  /** Requests for `repairId` are refused from now on; protections it left behind end. */
  closeRepair(repairId: string): void {
    const r = this.open.get(repairId);
    this.open.delete(repairId);
    for (const lane of r?.lanes ?? []) void this.d.port.unprotect(`${repairId}-${lane}`);
  }

  /**
   * Does what request `op` asks (after `checkRepairRequest`) and returns the encoded answer; the
   * machine's step answers and counts it (controller-requests.ts). Throws a refusal or the failure.
   */
  async answer(op: string, data: Uint8Array): Promise<Uint8Array> {
    const port = this.d.port;
    const ok = (seq: number) => encodeMessage(repairAnswerSpec, { ok: true, seq });
    switch (op) {
      case RepairOp.View: {
        const b = decodeMessage(repairViewRequestSpec, data);
        this.check({ op, ...b });
        return encodeMessage(repairViewSpec, viewToWire(await port.view(b.lanes)));
      }
      case RepairOp.Admit: {
        const b = decodeMessage(repairAdmitSpec, data);
        this.check({ op, ...b });
        return ok(await port.admit(b.replacement));
      }
      case RepairOp.Activate: {
        const b = decodeMessage(repairActivateSpec, data);
        this.check({ op, ...b });
        return ok(await port.activate({ ...b, ranges: RangeSet.fromJSON(b.ranges) }));
      }
      case RepairOp.Protect: {
        const b = decodeMessage(repairProtectSpec, data);
        this.check({ op, ...b });
        await port.protect({ id: b.id, lane: b.lane, ranges: RangeSet.fromJSON(b.ranges) });
        return ok(0);
      }
      case RepairOp.Unprotect: {
        const b = decodeMessage(repairUnprotectSpec, data);
        this.check({ op, ...b });
        await port.unprotect(b.id);
        return ok(0);
      }
      default:
        throw new RepairRequestRefusedError("unknown op", { op });
    }
  }

  private check(req: RepairRequest): void {
    checkRepairRequest(this.open, req);
  }
}

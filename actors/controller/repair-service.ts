import type { Counters } from "../../core/index.ts";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import {
  decodeMessage,
  encodeMessage,
  parseSubjectOf,
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
 * repairs make in-process (`port`), after `checkRepairRequest`. A refused or malformed request is
 * answered with its code, counted (`repair_request_<code>`) and changes nothing.
 */
export class RepairService {
  private readonly open = new Map<string, DelegatedRepair>();

  constructor(
    private readonly d: {
      readonly volume: string;
      readonly transport: Transport;
      readonly counters: Counters;
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

  /** Answers one request (never throws: a failure is the answer). */
  async handle(msg: InboundMessage): Promise<void> {
    try {
      const { volume, op } = parseSubjectOf("repair", msg.subject);
      if (volume !== this.d.volume) throw new RepairRequestRefusedError("another volume", { volume });
      const reply = await this.answer(op, msg.data);
      this.d.counters.inc("repair_request_answered");
      this.d.transport.respond(msg, reply);
    } catch (err) {
      const code = err instanceof CustodyError ? err.code : "repair_request_failed";
      this.d.counters.inc(`repair_request_${code.replace(/^repair_request_/, "")}`);
      this.d.transport.respond(
        msg,
        encodeMessage(repairAnswerSpec, {
          ok: false,
          code: code.slice(0, 64),
          message: (err instanceof Error ? err.message : String(err)).slice(0, 1024),
        }),
      );
    }
  }

  private async answer(op: string, data: Uint8Array): Promise<Uint8Array> {
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

import { HolderStatus, type ControlState } from "./control-state.ts";
import { AdmissionError, AdmissionRefusal, type AdmissionRequest } from "./admission-request.ts";
export {
  AdmissionError,
  AdmissionRefusal,
  encodeAdmissionRequest,
  readAdmissionRequest,
  type AdmissionRequest,
} from "./admission-request.ts";

/**
 * Admission of a holder's new incarnation. A restarted holder is a new incarnation that counts for
 * nothing until the control log admits it (`admit_holder`). It asks by publishing a signed
 * admission request on `custody.v1.admit.<holder>`; an operator (`custody holder admit`) or the
 * controller's admission policy commits the admission. The policy here is key continuity: the
 * request is signed by the key the log already admitted for that holder, from the same failure
 * domain, for a higher incarnation — anything else (a new key, a move) needs an operator.
 */

/**
 * Most an automatically admitted incarnation may lie above the admitted one (restarts that never got admitted each used
 * one).
 */
export const MAX_AUTO_INCARNATION_LEAP = 1024;

/**
 * The key-continuity admission policy: admits `req` only when the log already admitted this holder
 * with the same key and failure domain, the holder is active, and the incarnation is higher, by
 * at most MAX_AUTO_INCARNATION_LEAP. Pure;
 * throws AdmissionError naming the first rule broken.
 */
export function checkAutoAdmission(s: ControlState, req: AdmissionRequest): void {
  const cur = s.holders[req.holderId];
  const at = { holderId: req.holderId, incarnation: req.incarnation };
  if (cur === undefined)
    throw new AdmissionError(AdmissionRefusal.UnknownHolder, `holder ${req.holderId} was never admitted`, at);
  if (cur.status !== HolderStatus.active)
    throw new AdmissionError(AdmissionRefusal.NotActive, `holder ${req.holderId} is ${cur.status}`, {
      ...at,
      status: cur.status,
    });
  if (req.incarnation <= cur.incarnation) {
    throw new AdmissionError(
      AdmissionRefusal.NotNewer,
      `incarnation ${req.incarnation} of ${req.holderId} is not above the admitted ${cur.incarnation}`,
      { ...at, current: cur.incarnation },
    );
  }
  if (req.incarnation - cur.incarnation > MAX_AUTO_INCARNATION_LEAP) {
    throw new AdmissionError(
      AdmissionRefusal.IncarnationLeap,
      `incarnation ${req.incarnation} of ${req.holderId} leaps more than ${MAX_AUTO_INCARNATION_LEAP} past the ` +
        `admitted ${cur.incarnation}`,
      { ...at, current: cur.incarnation },
    );
  }
  if (Buffer.compare(Buffer.from(cur.publicKey), Buffer.from(req.publicKey)) !== 0) {
    throw new AdmissionError(
      AdmissionRefusal.KeyChanged,
      `incarnation ${req.incarnation} of ${req.holderId} names a key the log never admitted for it`,
      at,
    );
  }
  if (cur.failureDomain !== req.failureDomain) {
    throw new AdmissionError(
      AdmissionRefusal.DomainChanged,
      `${req.holderId} asks from ${req.failureDomain}, admitted in ${cur.failureDomain}`,
      { ...at, admitted: cur.failureDomain, asked: req.failureDomain },
    );
  }
}

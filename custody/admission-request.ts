import { z } from "zod";
import { CustodyError } from "../core/index.ts";
import { decodeMessage, defineMessage, encodeMessage } from "../transport/protocol/index.ts";
import { bytes, fixedBytes, identifier, timestampMs, uint } from "../transport/protocol/index.ts";
import type { KeyObject } from "node:crypto";
import {
  ED25519_PUBLIC_KEY_BYTES,
  ED25519_SIGNATURE_BYTES,
  publicKeyFromRaw,
  signBytes,
  verifyBytes,
} from "./signing.ts";

/**
 * A holder's admission request on the wire (`custody.v1.admit.<holder>`): what a new incarnation
 * states about itself, signed by the key it names. The policy that judges it is admission.ts; the
 * control log's scope rules (control-scope.ts) also read it, when an admission carries it. No
 * control state here, so both can use it.
 */

/** What a new incarnation states about itself (signed by its key). */
export interface AdmissionRequest {
  readonly holderId: string;
  readonly incarnation: number;
  /** Raw Ed25519 public key the incarnation signs receipts with. */
  readonly publicKey: Uint8Array;
  readonly failureDomain: string;
  /** When it asked (wall-clock ms; informational). */
  readonly at: number;
}

const admissionBodySpec = defineMessage({
  kind: "admission-body",
  version: 1,
  schema: z.object({
    holderId: identifier,
    incarnation: uint,
    publicKey: fixedBytes(ED25519_PUBLIC_KEY_BYTES),
    failureDomain: z.string().min(1).max(512),
    at: timestampMs,
  }),
  maxBytes: 2048,
});

/** `admission-request` v1: `body` = canonical request bytes, `signature` = Ed25519 over `body` by the requested key. */
export const admissionRequestSpec = defineMessage({
  kind: "admission-request",
  version: 1,
  schema: z.object({ body: bytes, signature: fixedBytes(ED25519_SIGNATURE_BYTES) }),
  maxBytes: 4096,
});

/** Why an admission request was not admitted automatically (the operator may still admit it). */
export const AdmissionRefusal = {
  /** The request is not signed by the key it names. */
  BadSignature: "admission_bad_signature",
  /** No incarnation of this holder was ever admitted: the first admission is the operator's. */
  UnknownHolder: "admission_unknown_holder",
  /** The request names another key than the one admitted: a key change is the operator's. */
  KeyChanged: "admission_key_changed",
  /** The request names another failure domain: a move is the operator's. */
  DomainChanged: "admission_domain_changed",
  /** The incarnation is not above the admitted one (a reused incarnation, or a replay). */
  NotNewer: "admission_not_newer",
  /** The holder is failed or retired in the log. */
  NotActive: "admission_holder_not_active",
  /**
   * The incarnation leaps more than MAX_AUTO_INCARNATION_LEAP (admission.ts) past the admitted one. A restart
   * claims the next incarnation from its state directory; a leap to 2^53-1 would leave no
   * incarnation for any later restart, so only an operator admits one.
   */
  IncarnationLeap: "admission_incarnation_leap",
} as const;
export type AdmissionRefusal = (typeof AdmissionRefusal)[keyof typeof AdmissionRefusal];

/** An admission request that was refused; `code` is an AdmissionRefusal. */
export class AdmissionError extends CustodyError {
  constructor(code: AdmissionRefusal, message: string, detail: Record<string, unknown> = {}) {
    super(code, message, detail);
  }
}

/** The wire bytes of `req`, signed with `privateKey` (which must be the key `req.publicKey` names). */
export function encodeAdmissionRequest(req: AdmissionRequest, privateKey: KeyObject): Uint8Array {
  const body = encodeMessage(admissionBodySpec, { ...req, publicKey: new Uint8Array(req.publicKey) });
  return encodeMessage(admissionRequestSpec, { body, signature: signBytes(privateKey, body) });
}

/**
 * Decodes an admission request and checks it is signed by the key it names. Throws WireError for
 * bad bytes and AdmissionError `admission_bad_signature`; nothing else is judged here.
 */
export function readAdmissionRequest(data: Uint8Array): AdmissionRequest {
  const signed = decodeMessage(admissionRequestSpec, data);
  const req = decodeMessage(admissionBodySpec, signed.body);
  if (!verifyBytes(publicKeyFromRaw(req.publicKey), signed.body, signed.signature)) {
    throw new AdmissionError(
      AdmissionRefusal.BadSignature,
      `admission request of ${req.holderId} is not signed by the key it names`,
      { holderId: req.holderId },
    );
  }
  return req;
}

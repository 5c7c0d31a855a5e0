import { CustodyError } from "../../core/index.ts";
import { identifierProblem } from "../../core/index.ts";

/**
 * The subject scheme: every NATS subject the system publishes or subscribes to is built and
 * parsed here, and nowhere else. Layout: `custody.v1.<kind>.<identifier tokens...>`.
 *
 * | kind     | subject                                            | carries                                   |
 * |----------|----------------------------------------------------|-------------------------------------------|
 * | unit     | custody.v1.unit.<toHolder>.<volume>.<lane>         | transport units into a holder             |
 * | credit   | custody.v1.credit.<fromHolder>.<volume>.<lane>     | credit grants back to the sender          |
 * | receipt  | custody.v1.receipt.<volume>.<lane>                 | signed receipt batches                    |
 * | ctrl     | custody.v1.ctrl.<region>                           | control events (JetStream)                |
 * | status   | custody.v1.status.<volume>                         | coverage / RPO / RTO reports              |
 * | release  | custody.v1.release.<holder>                        | release frontiers to a holder             |
 * | transfer | custody.v1.transfer.<toHolder>                     | custody transfer offers                   |
 * | event    | custody.v1.event.<volume>                          | contract violations and lifecycle events  |
 * | fetch    | custody.v1.fetch.<holder>.<volume>                 | repair/recovery reads of retained units   |
 * | admit    | custody.v1.admit.<holder>                          | a new incarnation asks to be admitted     |
 * | base     | custody.v1.base.<holder>                           | a base snapshot built beside a holder     |
 * | ps       | custody.v1.ps.<role>                               | "who is running": every process answers   |
 * | repair   | custody.v1.repair.<volume>.<op>                    | a repair task's requests to its controller|
 * | repair-task | custody.v1.repair-task.<volume>                 | a controller hands a repair to a worker   |
 * | audit    | custody.v1.audit.<holder>                          | retention-audit challenges to a holder    |
 * | probe    | custody.v1.probe.<toPeer>                          | route probes (pings, bursts) and answers  |
 * | route    | custody.v1.route.<fromPeer>                        | a prober's route measurements             |
 * | failover | custody.v1.failover.<volume>                       | a writer failover asked of the controller |
 * | replica-catchup | custody.v1.replica-catchup.<volume>.<replica> | a replica's catch-up requests to the primary |
 */
export const SUBJECT_PREFIX = "custody.v1";

/** The subject kinds, as an enumeration. */
export const SubjectKind = {
  Unit: "unit",
  Credit: "credit",
  Receipt: "receipt",
  Ctrl: "ctrl",
  Status: "status",
  Release: "release",
  Transfer: "transfer",
  Event: "event",
  Fetch: "fetch",
  Admit: "admit",
  Base: "base",
  Ps: "ps",
  Repair: "repair",
  RepairTask: "repair-task",
  Audit: "audit",
  Probe: "probe",
  Route: "route",
  Failover: "failover",
  ReplicaCatchup: "replica-catchup",
} as const;
export type SubjectKind = (typeof SubjectKind)[keyof typeof SubjectKind];

/** The identifier tokens of each kind, in subject order. */
export const SUBJECT_FIELDS = {
  unit: ["toHolder", "volume", "lane"],
  credit: ["fromHolder", "volume", "lane"],
  receipt: ["volume", "lane"],
  ctrl: ["region"],
  status: ["volume"],
  release: ["holder"],
  transfer: ["toHolder"],
  event: ["volume"],
  fetch: ["holder", "volume"],
  admit: ["holder"],
  base: ["holder"],
  ps: ["role"],
  repair: ["volume", "op"],
  "repair-task": ["volume"],
  audit: ["holder"],
  probe: ["toPeer"],
  route: ["fromPeer"],
  failover: ["volume"],
  "replica-catchup": ["volume", "replica"],
} as const satisfies Record<SubjectKind, readonly string[]>;

type FieldsOf<K extends SubjectKind> = { readonly [F in (typeof SUBJECT_FIELDS)[K][number]]: string };

/** A parsed concrete subject: the kind plus its named identifiers. */
export type ParsedSubject = { [K in SubjectKind]: { readonly kind: K } & FieldsOf<K> }[SubjectKind];

/** A parsed subject of one kind. */
export type SubjectOf<K extends SubjectKind> = Extract<ParsedSubject, { kind: K }>;

/** Longest accepted identifier, in UTF-16 code units (the identifier rule's home: core/identifier.ts). */
export { MAX_IDENTIFIER_LENGTH as MAX_TOKEN_LENGTH } from "../../core/index.ts";

/**
 * Thrown when an identifier cannot be a subject token, or a string is not a subject of this
 * scheme. `detail.token` is the offending token, `detail.role` what it was meant to be
 * (`volume`, `lane`, ...), `detail.reason` why it was refused.
 */
export class InvalidSubjectError extends CustodyError {
  constructor(message: string, detail: { token: string; role: string; reason: string; subject?: string }) {
    super("invalid_subject", message, detail);
  }
}

/** Why `token` cannot be an identifier, or undefined when it can; whether it is one (core/identifier.ts). */
export { identifierProblem as tokenProblem, isIdentifier as isValidToken } from "../../core/index.ts";

/** Returns `token` when it is a valid identifier; throws InvalidSubjectError naming it and `role` otherwise. */
export function checkToken(token: string, role: string): string {
  const reason = identifierProblem(token);
  if (reason !== undefined) {
    throw new InvalidSubjectError(`invalid ${role} ${JSON.stringify(token)}: ${reason}`, {
      token: String(token),
      role,
      reason,
    });
  }
  return token;
}

function fieldsOf(kind: unknown): readonly string[] | undefined {
  return typeof kind === "string" && Object.hasOwn(SUBJECT_FIELDS, kind)
    ? (SUBJECT_FIELDS as Record<string, readonly string[]>)[kind]
    : undefined;
}

/**
 * Builds the concrete subject for `msg`. Throws InvalidSubjectError when any identifier is
 * invalid (or the kind is unknown).
 */
export function buildSubject(msg: ParsedSubject): string {
  const fields = fieldsOf(msg.kind);
  if (fields === undefined) {
    throw new InvalidSubjectError(`unknown subject kind ${JSON.stringify(msg.kind)}`, {
      token: String(msg.kind),
      role: "kind",
      reason: "unknown kind",
    });
  }
  const values = msg as unknown as Record<string, string>;
  return [SUBJECT_PREFIX, msg.kind, ...fields.map((f) => checkToken(values[f] as string, f))].join(".");
}

/** `custody.v1.unit.<toHolder>.<volume>.<lane>`: transport units into holder `toHolder`. */
export function unitSubject(toHolder: string, volume: string, lane: string): string {
  return buildSubject({ kind: "unit", toHolder, volume, lane });
}

/** `custody.v1.credit.<fromHolder>.<volume>.<lane>`: credit grants from `fromHolder` back to the sender. */
export function creditSubject(fromHolder: string, volume: string, lane: string): string {
  return buildSubject({ kind: "credit", fromHolder, volume, lane });
}

/** `custody.v1.receipt.<volume>.<lane>`: receipt batches for one lane. */
export function receiptSubject(volume: string, lane: string): string {
  return buildSubject({ kind: "receipt", volume, lane });
}

/** `custody.v1.ctrl.<region>`: control events of one region. */
export function ctrlSubject(region: string): string {
  return buildSubject({ kind: "ctrl", region });
}

/** `custody.v1.status.<volume>`: coverage / RPO / RTO reports of a volume. */
export function statusSubject(volume: string): string {
  return buildSubject({ kind: "status", volume });
}

/** `custody.v1.release.<holder>`: release frontiers addressed to `holder`. */
export function releaseSubject(holder: string): string {
  return buildSubject({ kind: "release", holder });
}

/** `custody.v1.transfer.<toHolder>`: custody transfer offers to `toHolder`. */
export function transferSubject(toHolder: string): string {
  return buildSubject({ kind: "transfer", toHolder });
}

/** `custody.v1.event.<volume>`: contract-violation and lifecycle events of a volume. */
export function eventSubject(volume: string): string {
  return buildSubject({ kind: "event", volume });
}

/**
 * `custody.v1.fetch.<holder>.<volume>`: requests for units of `volume` that `holder` retains
 * (repair copies, recovery reads, base builds). The volume is a subject token, not only a body
 * field, so a principal's publish permission can say "fetch of vol-a from h-w1"; the holder refuses
 * a request whose body names another volume than its subject.
 */
export function fetchSubject(holder: string, volume: string): string {
  return buildSubject({ kind: "fetch", holder, volume });
}

/** Filter for every fetch request to `holder` (what its read service answers), any volume. */
export function fetchesToHolder(holder: string): string {
  return subjectFilter("fetch", { holder });
}

/** `custody.v1.admit.<holder>`: signed admission requests of a holder's new incarnation. */
export function admitSubject(holder: string): string {
  return buildSubject({ kind: "admit", holder });
}

/** `custody.v1.base.<holder>`: base snapshots materialized beside `holder` (its base builder announces them). */
export function baseSubject(holder: string): string {
  return buildSubject({ kind: "base", holder });
}

/** `custody.v1.ps.<role>`: a request every running process of `role` answers with its stats (`*` for all roles). */
export function psSubject(role: string): string {
  return buildSubject({ kind: "ps", role });
}

/** `custody.v1.audit.<holder>`: retention-audit challenges to `holder` (request/reply; see docs/custody.md). */
export function auditSubject(holder: string): string {
  return buildSubject({ kind: "audit", holder });
}

// --- Route probes (measured routes) ---------------------------------------------------------
/** `custody.v1.probe.<toPeer>`: route probes to a writer or holder process, and the answers back to the prober. */
export function probeSubject(toPeer: string): string {
  return buildSubject({ kind: "probe", toPeer });
}

/** `custody.v1.route.<fromPeer>`: the route measurements `fromPeer` publishes (RTT, jitter, throughput, load, age). */
export function routeSubject(fromPeer: string): string {
  return buildSubject({ kind: "route", fromPeer });
}

/** The peer a probe subject goes to; undefined for any other subject (link shaping routes probes like units). */
export function probeDestination(subject: string): string | undefined {
  try {
    const p = parseSubject(subject);
    return p.kind === "probe" ? p.toPeer : undefined;
  } catch {
    return undefined;
  }
}
// --- end route probes --------------------------------------------------------------------------

/**
 * A subscription filter for `kind`: every identifier given in `fields` is fixed (and validated),
 * every omitted one becomes `*`, so `subjectFilter("receipt", { volume: "v1" })` is
 * `custody.v1.receipt.v1.*` and `subjectFilter("unit", { toHolder: "h1" })` is
 * `custody.v1.unit.h1.*.*`. Throws InvalidSubjectError on an invalid identifier or unknown field.
 */
export function subjectFilter<K extends SubjectKind>(kind: K, fields: Partial<FieldsOf<K>> = {}): string {
  const names = fieldsOf(kind);
  if (names === undefined) {
    throw new InvalidSubjectError(`unknown subject kind ${JSON.stringify(kind)}`, {
      token: String(kind),
      role: "kind",
      reason: "unknown kind",
    });
  }
  const given = fields as Record<string, string | undefined>;
  for (const key of Object.keys(given)) {
    if (!names.includes(key)) {
      throw new InvalidSubjectError(`subject kind ${kind} has no field ${JSON.stringify(key)}`, {
        token: key,
        role: "field",
        reason: "unknown field",
      });
    }
  }
  return [SUBJECT_PREFIX, kind, ...names.map((f) => (given[f] === undefined ? "*" : checkToken(given[f], f)))].join(
    ".",
  );
}

/** `custody.v1.<kind>.>`: every subject of one kind (e.g. all receipts, all control events). */
export function allOfKind(kind: SubjectKind): string {
  if (fieldsOf(kind) === undefined) {
    throw new InvalidSubjectError(`unknown subject kind ${JSON.stringify(kind)}`, {
      token: String(kind),
      role: "kind",
      reason: "unknown kind",
    });
  }
  return `${SUBJECT_PREFIX}.${kind}.>`;
}

/** Filter for every transport unit addressed to `toHolder` (any volume, any lane). */
export function unitsToHolder(toHolder: string): string {
  return subjectFilter("unit", { toHolder });
}

/** Filter for every credit grant on one lane, from any holder (the sender's view). */
export function creditsForLane(volume: string, lane: string): string {
  return subjectFilter("credit", { volume, lane });
}

/** Filter for every receipt batch of one volume (all its lanes). */
export function receiptsOfVolume(volume: string): string {
  return subjectFilter("receipt", { volume });
}

/**
 * Parses a concrete subject of this scheme into its kind and identifiers. Throws
 * InvalidSubjectError when the prefix, kind or token count is wrong or a token is invalid
 * (wildcards included: a filter is not a concrete subject).
 */
export function parseSubject(subject: string): ParsedSubject {
  if (typeof subject !== "string") {
    throw new InvalidSubjectError("subject is not a string", {
      token: String(subject),
      role: "subject",
      reason: "not a string",
    });
  }
  const tokens = subject.split(".");
  const [root, version, kind, ...rest] = tokens;
  if (`${root}.${version}` !== SUBJECT_PREFIX || tokens.length < 3) {
    throw new InvalidSubjectError(`subject ${JSON.stringify(subject)} does not start with ${SUBJECT_PREFIX}.`, {
      token: `${root}.${version}`,
      role: "prefix",
      reason: "wrong prefix",
      subject,
    });
  }
  const names = fieldsOf(kind);
  if (names === undefined) {
    throw new InvalidSubjectError(`subject ${JSON.stringify(subject)} has unknown kind ${JSON.stringify(kind)}`, {
      token: String(kind),
      role: "kind",
      reason: "unknown kind",
      subject,
    });
  }
  if (rest.length !== names.length) {
    throw new InvalidSubjectError(
      `subject ${JSON.stringify(subject)}: ${kind} takes ${names.length} identifier(s), got ${rest.length}`,
      { token: rest.join("."), role: kind as string, reason: "wrong token count", subject },
    );
  }
  const out: Record<string, string> = { kind: kind as string };
  names.forEach((name, i) => {
    const token = rest[i] as string;
    const reason = identifierProblem(token);
    if (reason !== undefined) {
      throw new InvalidSubjectError(
        `subject ${JSON.stringify(subject)}: invalid ${name} ${JSON.stringify(token)}: ${reason}`,
        { token, role: name, reason, subject },
      );
    }
    out[name] = token;
  });
  return out as unknown as ParsedSubject;
}

/** Parses `subject` and checks it is of `kind`; throws InvalidSubjectError otherwise. */
export function parseSubjectOf<K extends SubjectKind>(kind: K, subject: string): SubjectOf<K> {
  const parsed = parseSubject(subject);
  if (parsed.kind !== kind) {
    throw new InvalidSubjectError(`subject ${JSON.stringify(subject)} is a ${parsed.kind} subject, expected ${kind}`, {
      token: parsed.kind,
      role: "kind",
      reason: `expected ${kind}`,
      subject,
    });
  }
  return parsed as SubjectOf<K>;
}

// --- Repair protocol (issue #18): a repair task talks to its controller over these subjects. ---

/** The requests a repair task makes of its controller, as the last token of its subject. */
export const RepairOp = {
  View: "view",
  Admit: "admit",
  Activate: "activate",
  Protect: "protect",
  Unprotect: "unprotect",
} as const;
export type RepairOp = (typeof RepairOp)[keyof typeof RepairOp];

/** `custody.v1.repair.<volume>.<op>`: a repair task's request to the controller of `volume`. */
export function repairSubject(volume: string, op: RepairOp): string {
  return buildSubject({ kind: "repair", volume, op });
}

/** Filter for every repair request to the controller of `volume` (what it answers). */
export function repairRequestsOfVolume(volume: string): string {
  return subjectFilter("repair", { volume });
}

/** `custody.v1.repair-task.<volume>`: a controller hands one repair of `volume` to a repair worker. */
export function repairTaskSubject(volume: string): string {
  return buildSubject({ kind: "repair-task", volume });
}

/**
 * `custody.v1.failover.<volume>`: the volume's writer or the operator asks its controller to record a failover
 * (request/reply).
 */
export function failoverSubject(volume: string): string {
  return buildSubject({ kind: "failover", volume });
}

// --- Replica catch-up (issue #18): a replica pulls what it missed from the primary volume's writer. ---

/**
 * `custody.v1.replica-catchup.<volume>.<replica>`: catch-up requests of `replica` to the primary of
 * `volume`. The replica is a subject token, not only a body field, so the server's publish
 * permissions (one subject per replica principal) say who is asking.
 */
export function replicaCatchupSubject(volume: string, replica: string): string {
  return buildSubject({ kind: "replica-catchup", volume, replica });
}

/** Filter for every replica's catch-up requests of `volume` (what the primary's catch-up service answers). */
export function replicaCatchupRequestsOfVolume(volume: string): string {
  return subjectFilter("replica-catchup", { volume });
}

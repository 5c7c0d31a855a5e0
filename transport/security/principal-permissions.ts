/**
 * Who may say what on the bus: the NATS publish/subscribe permissions of each principal, derived
 * from the subject scheme (transport/protocol/subjects.ts) and the principal's place in the topology. Pure:
 * no I/O, no NATS client. The rendered server config (server-config.ts) carries them; the server
 * enforces them, so identity comes from the connection, never from a header a publisher sets.
 *
 * Rules the derivation keeps (see docs/security.md):
 * - a writer publishes units of its own volume only, and only into that lane's first hops;
 * - a holder publishes credits only under its own id, receipts only for the lanes it serves, and
 *   units only into its downstream edges of those lanes;
 * - only the controller publishes release frontiers, and only to the holders of its volumes
 *   (`releaseTo`, from the deployment plan); the controller, and an operator given
 *   `commitRegions` (its signed bootstrap, holds and admissions), append to the control stream;
 * - only the controller of a volume answers its repair requests (`repair.<volume>.<op>`), which only
 *   the repair principal and that controller may send; only the controller hands repair tasks
 *   (`repair-task.<volume>`) to the repair principal;
 * - only the controller of a volume answers its failover requests (`failover.<volume>`), which only
 *   that volume's writer and the operator may send;
 * - a replica asks for catch-up only under its own id (`replica-catchup.<volume>.<replica>`), and
 *   only its volume's writer (beside the primary volume) answers those requests;
 * - only the operator uses the JetStream API beyond reading the control stream (creates, updates,
 *   deletes or purges streams, creates or deletes consumers). A reader reads entries by sequence
 *   (`STREAM.MSG.GET`) and learns of new ones on the control subject: no consumer, so no push
 *   consumer whose deliver subject (in the request body, out of the permissions' reach) could
 *   point a redelivery storm at another principal's subject;
 * - a fetch names the holder and the volume in its subject (`fetch.<holder>.<volume>`): the
 *   controller and repair fetch their volumes only, a base builder its holder's volume only, the
 *   operator (`custody recover`) any;
 * - the operator reads every volume's receipts (read only), so `custody status` and `custody recover`
 *   answer from the control log and the holders when no controller does;
 * - nobody may publish into another principal's inbox: replies go out under `allow_responses`
 *   (the server lets a responder answer exactly the requests it received), and each principal's
 *   own inbox lives under `inboxPrefixFor(role, id)`, which only it may subscribe to.
 */
import { controlStreamName, streamAdvisorySubject } from "../index.ts";
import {
  admitSubject,
  allOfKind,
  baseSubject,
  checkToken,
  creditSubject,
  ctrlSubject,
  eventSubject,
  failoverSubject,
  fetchSubject,
  auditSubject,
  receiptSubject,
  releaseSubject,
  repairRequestsOfVolume,
  repairTaskSubject,
  replicaCatchupRequestsOfVolume,
  replicaCatchupSubject,
  statusSubject,
  subjectFilter,
  transferSubject,
  unitSubject,
} from "../protocol/index.ts";
import { SecurityError, SecurityErrorCode } from "./security-error.ts";
import { addRoutePermissions } from "./route-probe-permissions.ts";

/** The principals that connect to the bus, each as its own NATS user. */
export const Role = {
  Writer: "writer",
  Holder: "holder",
  Controller: "controller",
  Repair: "repair",
  Operator: "operator",
  /** Builds rolling bases beside a store holder and announces them to it. */
  BaseBuilder: "base-builder",
  /** A volume replica fed units like a first hop, answering flush requests. */
  Replica: "replica",
} as const;
export type Role = (typeof Role)[keyof typeof Role];

/** One lane a writer feeds and the holders it sends that lane to first. */
export interface WriterLaneScope {
  readonly lane: string;
  readonly firstHops: readonly string[];
}

/** One lane a holder serves and the holders it forwards that lane to. */
export interface HolderLaneScope {
  readonly volume: string;
  readonly lane: string;
  readonly downstream: readonly string[];
}

/** What each role's permissions are derived from, besides its id. */
export interface RoleScopes {
  readonly writer: {
    readonly controlRegion: string;
    readonly volume: string;
    readonly lanes: readonly WriterLaneScope[];
  };
  readonly holder: { readonly controlRegion: string; readonly lanes: readonly HolderLaneScope[] };
  /**
   * `releaseTo`: the holders serving its volumes' lanes (standbys included), the only ones it sends
   * release frontiers to.
   */
  readonly controller: {
    readonly controlRegion: string;
    readonly volumes: readonly string[];
    readonly releaseTo: readonly string[];
  };
  readonly repair: { readonly controlRegion: string; readonly volumes: readonly string[] };
  /**
   * The operator's stream management does not depend on the topology. `commitRegions`: the control
   * streams it commits to (its signed bootstrap, holds and admissions); without it the operator
   * manages streams but appends to none. (`controlRegions` is only checked to be region tokens.)
   */
  readonly operator: { readonly controlRegions?: readonly string[]; readonly commitRegions?: readonly string[] };
  readonly "base-builder": { readonly holder: string; readonly volume: string };
  readonly replica: { readonly volume: string; readonly lanes: readonly string[] };
}

/** One principal to provision: its role, id and the scope its permissions are derived from. */
export type PrincipalSpec = {
  [R in Role]: { readonly role: R; readonly id: string; readonly scope: RoleScopes[R] };
}[Role];

/** A principal's permissions, as the server config states them. Subjects are sorted and unique. */
export interface SubjectPermissions {
  readonly publish: readonly string[];
  readonly subscribe: readonly string[];
  /** May answer requests it received (once each), without any publish right on `_INBOX`. */
  readonly allowResponses: boolean;
  /** The inbox prefix the principal's client must use (`inboxPrefix` of nats.js). */
  readonly inboxPrefix: string;
}

/** The JetStream API prefix (the default domain). */
export const JS_API = "$JS.API";

/**
 * The inbox prefix of a principal: `_INBOX.<role>.<id>`. Its replies (requests, JetStream API
 * answers, ordered-consumer deliveries) arrive under it, and only it may subscribe there.
 */
export function inboxPrefixFor(role: Role, id: string): string {
  return `_INBOX.${checkRole(role)}.${checkToken(id, "principal id")}`;
}

/**
 * The JetStream API subjects a reader of one control stream publishes to: account info (the
 * client checks JetStream is there), stream info (its last sequence) and message get (one entry by
 * sequence). None of them changes the stream or creates anything on the server: no consumer.
 */
export function controlLogReadSubjects(region: string): string[] {
  const stream = controlStreamName(checkToken(region, "region"));
  return [`${JS_API}.INFO`, `${JS_API}.STREAM.INFO.${stream}`, `${JS_API}.STREAM.MSG.GET.${stream}`];
}

/**
 * The permissions of principal `id` in `role`, derived from `scope`. Throws SecurityError
 * `invalid_principal` for an unknown role and InvalidSubjectError for an identifier that cannot
 * be a subject token.
 */
export function permissionsFor<R extends Role>(role: R, id: string, scope: RoleScopes[R]): SubjectPermissions {
  const inboxPrefix = inboxPrefixFor(role, id);
  const pub = new Set<string>();
  const sub = new Set<string>([`${inboxPrefix}.>`, subjectFilter("ps")]);
  switch (role) {
    case Role.Writer:
      writer(scope as RoleScopes["writer"], pub, sub);
      break;
    case Role.Holder:
      holder(id, scope as RoleScopes["holder"], pub, sub);
      break;
    case Role.Controller:
      controller(scope as RoleScopes["controller"], pub, sub);
      break;
    case Role.Repair:
      repair(scope as RoleScopes["repair"], pub, sub);
      break;
    case Role.Operator:
      operator(scope as RoleScopes["operator"], pub, sub);
      break;
    case Role.BaseBuilder: {
      // It reads its holder's units of its volume (fetch) and announces the bases it built.
      const s = scope as RoleScopes["base-builder"];
      pub.add(fetchSubject(s.holder, s.volume));
      pub.add(baseSubject(s.holder));
      break;
    }
    case Role.Replica: {
      const s = scope as RoleScopes["replica"];
      for (const lane of s.lanes) sub.add(unitSubject(id, s.volume, lane));
      // Catch-up requests to the primary, under its own id only: the subject says who asks.
      pub.add(replicaCatchupSubject(s.volume, id));
      break;
    }
    default:
      throw new SecurityError(SecurityErrorCode.InvalidPrincipal, `unknown role ${JSON.stringify(role)}`, { role, id });
  }
  if (role !== Role.Operator && role !== Role.Repair && role !== Role.Replica) serviceDiscovery(role, id, sub);
  addRoutePermissions(role, id, pub, sub);
  return { publish: [...pub].sort(), subscribe: [...sub].sort(), allowResponses: true, inboxPrefix };
}

/**
 * What a `custody run` process listens on as a NATS service (`custody-<role>`, see
 * actors/runtime/service-registration.ts): the `$SRV` PING/INFO/STATS requests, to all services, to its
 * service name and to its instance, and its own `stats` endpoint. It answers under `allow_responses`.
 */
export function serviceSubjects(role: Role, id: string): string[] {
  const name = `custody-${checkRole(role)}`;
  const verbs = ["PING", "INFO", "STATS"];
  return [
    ...verbs.flatMap((v) => [`$SRV.${v}`, `$SRV.${v}.${name}`, `$SRV.${v}.${name}.*`]),
    `custody.v1.svc.${role}.${checkToken(id, "principal id")}`,
  ];
}

function serviceDiscovery(role: Role, id: string, sub: Set<string>): void {
  for (const s of serviceSubjects(role, id)) sub.add(s);
}

function writer(s: RoleScopes["writer"], pub: Set<string>, sub: Set<string>): void {
  const v = s.volume;
  for (const l of s.lanes) {
    for (const hop of l.firstHops) {
      // Units (and credit requests, which travel on the unit subject) into first hops only.
      pub.add(unitSubject(hop, v, l.lane));
      sub.add(creditSubject(hop, v, l.lane));
      sub.add(releaseSubject(hop));
    }
    sub.add(receiptSubject(v, l.lane));
  }
  pub.add(eventSubject(v));
  // A new writer asks its volume's controller to record its failover (request/reply).
  pub.add(failoverSubject(v));
  sub.add(statusSubject(v));
  // Its catch-up service answers the volume's replicas (under allow_responses).
  sub.add(replicaCatchupRequestsOfVolume(v));
  readControlLog(s.controlRegion, pub, sub);
}

function holder(id: string, s: RoleScopes["holder"], pub: Set<string>, sub: Set<string>): void {
  for (const l of s.lanes) {
    sub.add(unitSubject(id, l.volume, l.lane));
    pub.add(creditSubject(id, l.volume, l.lane));
    pub.add(receiptSubject(l.volume, l.lane));
    sub.add(receiptSubject(l.volume, l.lane));
    pub.add(eventSubject(l.volume));
    for (const d of l.downstream) {
      pub.add(unitSubject(d, l.volume, l.lane));
      sub.add(creditSubject(d, l.volume, l.lane));
      sub.add(releaseSubject(d));
    }
  }
  sub.add(releaseSubject(id));
  sub.add(transferSubject(id));
  sub.add(subjectFilter("fetch", { holder: id }));
  // Retention-audit challenges to this holder alone (answered under allow_responses).
  sub.add(auditSubject(id));
  sub.add(baseSubject(id));
  pub.add(admitSubject(id));
  // Custody transfers go to whichever holder the control log names; the receiver checks them.
  pub.add(subjectFilter("transfer"));
  readControlLog(s.controlRegion, pub, sub);
}

function controller(s: RoleScopes["controller"], pub: Set<string>, sub: Set<string>): void {
  for (const v of s.volumes) {
    sub.add(subjectFilter("receipt", { volume: v }));
    sub.add(eventSubject(v));
    pub.add(statusSubject(v));
    // It answers the repairs it handed out, and may hand a repair to a worker (and ask itself).
    sub.add(repairRequestsOfVolume(v));
    pub.add(repairRequestsOfVolume(v));
    pub.add(repairTaskSubject(v));
    // It alone answers the volume's failover requests.
    sub.add(failoverSubject(v));
    // Repair may run inside the controller, and audits take their reference copy by fetch: its volumes only.
    pub.add(subjectFilter("fetch", { volume: v }));
  }
  sub.add(subjectFilter("admit"));
  for (const h of s.releaseTo) pub.add(releaseSubject(h));
  // The only principal that appends to the control stream (a JetStream publish on its subject).
  pub.add(ctrlSubject(s.controlRegion));
  // Repair may run inside the controller: it moves custody between holders.
  pub.add(subjectFilter("transfer"));
  // Retention audits: challenges to any holder (the answer's reference copy comes through fetch).
  pub.add(subjectFilter("audit"));
  readControlLog(s.controlRegion, pub, sub);
}

function repair(s: RoleScopes["repair"], pub: Set<string>, sub: Set<string>): void {
  for (const v of s.volumes) {
    sub.add(statusSubject(v));
    // It takes repair tasks of its volumes and asks their controllers for reads and commits.
    sub.add(repairTaskSubject(v));
    pub.add(repairRequestsOfVolume(v));
    pub.add(subjectFilter("fetch", { volume: v }));
  }
  pub.add(subjectFilter("transfer"));
  readControlLog(s.controlRegion, pub, sub);
}

function operator(s: RoleScopes["operator"], pub: Set<string>, sub: Set<string>): void {
  // Stream management (create, update, delete, purge) is the operator's alone.
  pub.add(`${JS_API}.>`);
  pub.add(allOfKind("ps"));
  // `custody recover` reads retained units from the holders.
  pub.add(subjectFilter("fetch"));
  // `custody failover`: the operator asks any volume's controller to record a writer failover.
  pub.add(subjectFilter("failover"));
  // Service discovery requests (`custody ps`, `nats micro ls`); the roles answer under allow_responses.
  pub.add("$SRV.>");
  sub.add(allOfKind("status"));
  sub.add(allOfKind("event"));
  // `custody status` / `custody recover` when no controller answers: they verify the holders'
  // signed receipts themselves (read only: a receipt is signed by its holder, so reading one grants nothing).
  sub.add(allOfKind("receipt"));
  // Bootstrap, holds and admissions are operator commits (signed with the operator key): a
  // JetStream publish on the control subject, as the controller's commits are.
  // It reads the control logs it is given like any reader (entries by sequence, new ones announced on the subject).
  for (const r of [...(s.controlRegions ?? []), ...(s.commitRegions ?? [])])
    for (const x of controlLogWatchSubjects(r)) sub.add(x);
  for (const r of s.commitRegions ?? []) pub.add(ctrlSubject(checkToken(r, "region")));
}

/**
 * Reads entries by sequence; a plain subscription on the control subject says when new ones were
 * committed, and the server's advisories about the stream say when what was read may be stale.
 */
function readControlLog(region: string, pub: Set<string>, sub: Set<string>): void {
  for (const s of controlLogReadSubjects(region)) pub.add(s);
  for (const s of controlLogWatchSubjects(region)) sub.add(s);
}

/** What a reader of one control stream subscribes to: the control subject and the stream's advisories. */
export function controlLogWatchSubjects(region: string): string[] {
  return [ctrlSubject(region), streamAdvisorySubject(controlStreamName(checkToken(region, "region")))];
}

function checkRole(role: string): Role {
  if (!Object.values(Role).includes(role as Role)) {
    throw new SecurityError(SecurityErrorCode.InvalidPrincipal, `unknown role ${JSON.stringify(role)}`, { role });
  }
  return role as Role;
}

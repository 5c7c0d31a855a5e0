/**
 * Rebuilds the causal tree of one unit from a run's JSON-lines span files (pure once the lines are
 * read): write → each first hop's `link.send` → that holder's `admit` → its `forward` → the next
 * `link.send` → the next `admit` …, with each holder's `receipt` (linked to the admits it covers)
 * and the holder's next `release` hung under it. Every node carries its start offset from the
 * root, its duration and, for an admit, the hop latency (admit start − send start).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { CustodyError } from "../../../core/index.ts";
import type { JsonlSpanRecord } from "./jsonl-span-exporter.ts";

/** Thrown for a selector that is neither `<volume>:<seq>` nor a receipt span id, or that matches nothing. */
export class TraceQueryError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("trace_not_found", message, detail);
  }
}

/** One node of the tree. */
export interface TraceNode {
  readonly name: string;
  readonly spanId: string;
  readonly actor: string;
  readonly site: string;
  readonly offsetMs: number;
  readonly durationMs: number;
  /** For an admit: time from the sender's `link.send` start to this admit's start. */
  readonly hopLatencyMs?: number;
  /** For a link.send: the configured delay the link shaper applied. */
  readonly linkDelayMs?: number;
  readonly detail: string;
  /**
   * For an admit: what became of the unit there (`stored`, `duplicate`, `replayed`, `refused`;
   * `not-stored` on older spans).
   */
  readonly outcome?: string;
  /** True for a `link.send` between sites of different regions. */
  readonly crossRegion?: boolean;
  /** How the node hangs on its parent: a real parent span, or a span link (receipts), or the holder's next release. */
  readonly relation: "parent" | "link" | "next-release";
  readonly children: TraceNode[];
}

/** The selected unit's tree. */
export interface TraceTree {
  readonly selector: string;
  readonly traceIds: string[];
  /** Wall-clock ms since the epoch of the earliest span: what every node's `offsetMs` counts from. */
  readonly t0Ms: number;
  readonly roots: TraceNode[];
  readonly hops: number;
  readonly crossRegionHops: number;
  readonly receipts: number;
}

/** Every span line of every `*.jsonl` file in `<runDir>/spans` (unreadable lines are skipped). */
export function readRunSpans(runDir: string): JsonlSpanRecord[] {
  const dir = join(runDir, "spans");
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".jsonl"));
  } catch {
    throw new TraceQueryError(`no span files in ${dir}`, { dir });
  }
  const out: JsonlSpanRecord[] = [];
  for (const f of files) {
    for (const line of readFileSync(join(dir, f), "utf8").split("\n")) {
      if (line.trim() === "") continue;
      try {
        out.push(JSON.parse(line) as JsonlSpanRecord);
      } catch {
        // a torn last line from a SIGKILLed process
      }
    }
  }
  return out;
}

/** A span's start, in ms since the epoch. */
export const startMs = (s: JsonlSpanRecord) => Number(BigInt(s.startUnixNano) / 1000n) / 1000;
const num = (v: unknown) => (typeof v === "number" ? v : undefined);

/** `[first, last]` a span names, if it names both. */
export function seqRange(s: JsonlSpanRecord): [number, number] | undefined {
  const f = num(s.attributes["custody.first_seq"]);
  const l = num(s.attributes["custody.last_seq"]);
  return f !== undefined && l !== undefined ? [f, l] : undefined;
}

/**
 * What became of the unit at an admit (`custody.outcome`, see holder-ingress.ts). Spans written
 * before holders named it carry a range only when the unit was stored.
 */
export function admitOutcome(s: JsonlSpanRecord): string {
  const o = s.attributes["custody.outcome"];
  if (typeof o === "string") return o;
  return seqRange(s) !== undefined ? "stored" : "not-stored";
}

const OUTCOME_TEXT: Readonly<Record<string, string>> = {
  stored: "",
  duplicate: " (already held: a re-send)",
  replayed: " (no credit backed it: not stored)",
  "not-stored": " (not stored: a re-send it held, or refused)",
};

/**
 * `seq a..b` of an admit — its own range, else (older spans) the range of the send that carried it —
 * and its outcome.
 */
function admitDetail(s: JsonlSpanRecord, send: JsonlSpanRecord | undefined): string {
  const r = seqRange(s) ?? (send !== undefined ? seqRange(send) : undefined);
  const outcome = admitOutcome(s);
  const why =
    outcome === "refused"
      ? ` (refused: ${String(s.attributes["custody.rejected"] ?? "?")})`
      : (OUTCOME_TEXT[outcome] ?? ` (${outcome})`);
  return `${r === undefined ? "seq ?" : `seq ${r[0]}..${r[1]}`}${why}`;
}

function coversSeq(s: JsonlSpanRecord, volume: string, seq: number): boolean {
  const a = s.attributes;
  if (a["custody.volume"] !== volume) return false;
  if (num(a["custody.seq"]) === seq) return true;
  const r = seqRange(s);
  return r !== undefined && r[0] <= seq && seq <= r[1];
}

/** The traces `selector` names (see buildTraceTree). Throws TraceQueryError when nothing matches. */
function selectedTraces(spans: readonly JsonlSpanRecord[], selector: string): Set<string> {
  const unit = /^([A-Za-z0-9_-]+):(\d+)$/.exec(selector);
  let traceIds: Set<string>;
  if (unit !== null) {
    const [, volume, seqText] = unit;
    const seq = Number(seqText);
    traceIds = new Set(
      spans
        .filter((s) => (s.name === "writer.write" || s.name === "holder.admit") && coversSeq(s, volume!, seq))
        .map((s) => s.traceId),
    );
  } else if (/^[0-9a-f]{16}$/.test(selector)) {
    const r = spans.find((s) => s.spanId === selector && s.name === "holder.receipt");
    if (r === undefined) throw new TraceQueryError(`no receipt span ${selector} in this run`, { selector });
    traceIds = new Set(r.links.map((l) => l.traceId));
  } else {
    throw new TraceQueryError(
      `trace needs <volume>:<seq> or a receipt id (16 hex digits), got ${JSON.stringify(selector)}`,
      { selector },
    );
  }
  if (traceIds.size === 0) throw new TraceQueryError(`no spans for ${selector} in this run`, { selector });
  return traceIds;
}

/** What a node of the tree says about its span, by the span's kind. */
function spanDetail(
  s: JsonlSpanRecord,
  actor: string,
  byId: ReadonlyMap<string, JsonlSpanRecord>,
  regionOfSite: Readonly<Record<string, string>>,
): Pick<TraceNode, "detail" | "hopLatencyMs" | "linkDelayMs" | "crossRegion" | "outcome"> {
  const a = s.attributes;
  let detail = "";
  let hopLatencyMs: number | undefined;
  let linkDelayMs: number | undefined;
  let crossRegion: boolean | undefined;
  let outcome: string | undefined;
  if (s.name === "link.send") {
    const from = String(a["custody.from_site"]);
    const to = String(a["custody.to_site"]);
    crossRegion =
      regionOfSite[from] !== undefined && regionOfSite[to] !== undefined && regionOfSite[from] !== regionOfSite[to];
    linkDelayMs = num(a["custody.link_delay_ms"]);
    detail = `${from} -> ${to} (${String(a["custody.to"])})${crossRegion ? " cross-region" : ""}`;
  } else if (s.name === "holder.admit") {
    const parent = s.parentSpanId === undefined ? undefined : byId.get(s.parentSpanId);
    if (parent !== undefined) hopLatencyMs = startMs(s) - startMs(parent);
    detail = admitDetail(s, parent);
    outcome = admitOutcome(s);
  } else if (s.name === "writer.write") {
    detail = `lba ${String(a["custody.lba"])} lsn ${String(a["custody.lsn"])} seq ${String(a["custody.seq"])}`;
  } else if (s.name === "holder.forward") {
    detail = `to ${String(a["custody.edge"])}`;
  } else if (s.name === "holder.receipt" || s.name === "holder.edge_receipt") {
    detail = `receipt id ${s.spanId} (${String(a["custody.units"] ?? "?")} units)`;
  } else if (s.name === "holder.release") {
    detail = `next release at ${actor} (its span names no range)`;
  }
  return { detail, hopLatencyMs, linkDelayMs, crossRegion, ...(outcome !== undefined ? { outcome } : {}) };
}

/**
 * Builds the tree for `selector`: `<volume>:<seq>` (a lane sequence) or the span id of a
 * `holder.receipt` (printed by this tree as the receipt id). `regionOfSite` marks cross-region
 * hops. Throws TraceQueryError when nothing matches.
 */
export function buildTraceTree(
  spans: readonly JsonlSpanRecord[],
  selector: string,
  regionOfSite: Readonly<Record<string, string>> = {},
): TraceTree {
  const traceIds = selectedTraces(spans, selector);

  const inTrace = spans.filter((s) => traceIds.has(s.traceId));
  const ids = new Set(inTrace.map((s) => s.spanId));
  const t0 = Math.min(...inTrace.map(startMs));
  const byParent = new Map<string, JsonlSpanRecord[]>();
  for (const s of inTrace) {
    const p = s.parentSpanId !== undefined && ids.has(s.parentSpanId) ? s.parentSpanId : "";
    byParent.set(p, [...(byParent.get(p) ?? []), s]);
  }
  const receiptsOf = new Map<string, JsonlSpanRecord[]>();
  for (const s of spans) {
    if (s.name !== "holder.receipt" && s.name !== "holder.edge_receipt") continue;
    for (const l of s.links) if (ids.has(l.spanId)) receiptsOf.set(l.spanId, [...(receiptsOf.get(l.spanId) ?? []), s]);
  }
  const releases = spans.filter((s) => s.name === "holder.release");
  const byId = new Map(inTrace.map((s) => [s.spanId, s]));
  let hops = 0;
  let cross = 0;
  let receiptCount = 0;

  const node = (s: JsonlSpanRecord, relation: TraceNode["relation"]): TraceNode => {
    const actor = String(s.resource["custody.actor"] ?? "?");
    const site = String(s.resource["custody.site"] ?? "?");
    const { detail, hopLatencyMs, linkDelayMs, crossRegion, outcome } = spanDetail(s, actor, byId, regionOfSite);
    if (s.name === "link.send") hops++;
    if (crossRegion === true) cross++;
    if (s.name === "holder.receipt" || s.name === "holder.edge_receipt") receiptCount++;
    const children: TraceNode[] = (byParent.get(s.spanId) ?? [])
      .sort((x, y) => startMs(x) - startMs(y))
      .map((c) => node(c, "parent"));
    for (const r of receiptsOf.get(s.spanId) ?? []) {
      const rn = node(r, "link");
      const rel = releases
        .filter((x) => x.resource["custody.actor"] === r.resource["custody.actor"] && startMs(x) >= startMs(r))
        .sort((x, y) => startMs(x) - startMs(y))[0];
      if (rel !== undefined && r.name === "holder.receipt") rn.children.push(node(rel, "next-release"));
      children.push(rn);
    }
    return {
      name: s.name,
      spanId: s.spanId,
      actor,
      site,
      offsetMs: startMs(s) - t0,
      durationMs: s.durationMs,
      hopLatencyMs,
      linkDelayMs,
      detail,
      ...(outcome !== undefined ? { outcome } : {}),
      crossRegion,
      relation,
      children,
    };
  };
  const roots = (byParent.get("") ?? []).sort((x, y) => startMs(x) - startMs(y)).map((s) => node(s, "parent"));
  return { selector, traceIds: [...traceIds], t0Ms: t0, roots, hops, crossRegionHops: cross, receipts: receiptCount };
}

/** Flattens the tree into table rows (depth shown by indentation). */
export function traceRows(tree: TraceTree): Record<string, unknown>[] {
  const rows: Record<string, unknown>[] = [];
  const walk = (n: TraceNode, depth: number) => {
    const mark = n.relation === "link" ? "~ " : n.relation === "next-release" ? "> " : "";
    rows.push({
      span: `${"  ".repeat(depth)}${mark}${n.name}`,
      actor: n.actor,
      site: n.site,
      "at ms": n.offsetMs.toFixed(2),
      "dur ms": n.durationMs.toFixed(2),
      "hop ms": n.hopLatencyMs === undefined ? "" : n.hopLatencyMs.toFixed(2),
      detail: n.detail,
    });
    for (const c of n.children) walk(c, depth + 1);
  };
  for (const r of tree.roots) walk(r, 0);
  return rows;
}

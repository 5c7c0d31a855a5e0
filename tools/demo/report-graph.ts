/**
 * The custody graph of report.html (pure SVG): the writer, every holder and the controllers as
 * boxes in columns by hop (writer, first hop, second hop, …, control), each box naming its site,
 * region and AZ, struck regions marked. Legs are drawn as right-angled arrows that turn only in the
 * gaps between columns (a leg skipping a column passes beneath its boxes), so no arrow crosses a
 * box; each leg's label (latency, price) sits on the last stretch of its own arrow, just before the
 * box it enters, where no other line runs.
 */
import { controllerIdOf } from "./custody-deployment.ts";
import type { Deployment } from "./deployment.ts";
import { edgeBetween, volumesOf } from "./deployment.ts";
import { esc } from "./report-strike.ts";
import { deploymentOfVolume } from "./waypoint-variant.ts";

/** Colours the graph legend names. */
export const GRAPH_COLOURS = { leg: "#334155", only: "#0891b2", struck: "#7c3aed" } as const;

const W = 1280;
const MARGIN = 14;
const TOP = 34;
const LINE = 15;
const BOX_GAP = 22;
/** Width of one character at `px` (DejaVu Sans, Debian's default sans, runs wide), bold a little wider. */
const textWidth = (s: string, px: number, bold = false) => s.length * px * (bold ? 0.68 : 0.62);

interface Node {
  readonly id: string;
  readonly kind: "writer" | "holder" | "controllers";
  readonly lines: string[];
  readonly struck: boolean;
  readonly site?: string;
  col: number;
  x: number;
  y: number;
  h: number;
  inPorts: string[];
}

interface Leg {
  readonly from: string;
  readonly to: string;
  /** The one volume whose path alone has this leg, or undefined when every volume's has it. */
  readonly only?: string;
  readonly label: string;
}

/** Every custody leg of `d`'s first volume, then those only the comparison volume's path has. */
function graphLegs(d: Deployment): Leg[] {
  const legsOf = (x: Deployment): [string, string][] => [
    ...x.writer.holders.map((h): [string, string] => [x.writer.id, h]),
    ...x.holders.flatMap((h) => h.downstream.map((y): [string, string] => [h.id, y])),
  ];
  const main = legsOf(d);
  const cmp = d.waypointComparison;
  const alt =
    cmp === undefined
      ? []
      : legsOf(deploymentOfVolume(d, cmp.volume)).filter(([a, b]) => !main.some(([x, y]) => x === a && y === b));
  const actorSite = (id: string) => (id === d.writer.id ? d.writer.site : d.holders.find((h) => h.id === id)!.site);
  const labelOf = (a: string, b: string, only?: string) => {
    const e = edgeBetween(d, actorSite(a), actorSite(b));
    const priced = e === undefined ? "same site" : `${e.latencyMs} ms · $${e.pricePerGb}/GB`;
    return `${priced}${only === undefined ? "" : ` · ${only} only`}`;
  };
  return [
    ...main.map(([a, b]) => ({ from: a, to: b, label: labelOf(a, b) })),
    ...alt.map(([a, b]) => ({ from: a, to: b, only: cmp!.volume, label: labelOf(a, b, cmp!.volume) })),
  ];
}

/** Columns by the longest hop count from the writer. */
function hopDepths(d: Deployment, legs: readonly Leg[]): Map<string, number> {
  const depth = new Map<string, number>([[d.writer.id, 0]]);
  for (let changed = true; changed;) {
    changed = false;
    for (const l of legs) {
      const next = (depth.get(l.from) ?? -Infinity) + 1;
      if (next > (depth.get(l.to) ?? -Infinity) && next <= d.holders.length) {
        depth.set(l.to, next);
        changed = true;
      }
    }
  }
  return depth;
}

/** The boxes: the writer, every holder in its hop column, and the controllers in the last column. */
function graphNodes(d: Deployment, volumes: readonly string[], depth: ReadonlyMap<string, number>): Node[] {
  const struck = new Set([d.failures.first, d.failures.second]);
  const siteOf = new Map(d.sites.map((s) => [s.id, s]));
  const where = (site: string) => {
    const s = siteOf.get(site)!;
    return `${s.id} · ${s.region} / ${s.az}`;
  };
  const unplaced = { x: 0, y: 0, h: 0 };
  const nodes: Node[] = [
    {
      id: d.writer.id,
      kind: "writer",
      lines: [`${d.writer.id} · writer`, where(d.writer.site), `writes ${volumes.join(", ")}`],
      struck: struck.has(siteOf.get(d.writer.site)!.region),
      site: d.writer.site,
      col: 0,
      ...unplaced,
      inPorts: [],
    },
    ...d.holders.map((h): Node => ({
      id: h.id,
      kind: "holder",
      lines: [`${h.id} · ${h.role}`, where(h.site)],
      struck: struck.has(siteOf.get(h.site)!.region),
      site: h.site,
      col: depth.get(h.id) ?? 1,
      ...unplaced,
      inPorts: [],
    })),
  ];
  const controllers = volumes.map((v) => `${controllerIdOf(d, v)} evaluates ${v}`);
  nodes.push({
    id: "controllers",
    kind: "controllers",
    lines: [`controllers · ${d.controller.region}`, "every holder sends them receipts", ...controllers],
    struck: struck.has(d.controller.region),
    col: Math.max(...nodes.map((n) => n.col)) + 1,
    ...unplaced,
    inPorts: [],
  });
  for (const n of nodes) if (n.struck) n.lines.push("region struck in this run");
  return nodes;
}

/** The graph as laid out: boxes placed, and where every leg leaves, runs and enters. */
interface GraphLayout {
  readonly legs: readonly Leg[];
  readonly nodes: readonly Node[];
  readonly byId: ReadonlyMap<string, Node>;
  readonly lastCol: number;
  readonly boxW: number;
  readonly colX: readonly number[];
  readonly width: number;
  /** Legs skipping columns: the level each runs at beneath the boxes. */
  readonly corridorY: ReadonlyMap<Leg, number>;
  readonly outY: (n: Node, only: string | undefined) => number;
  readonly portY: (n: Node, key: string) => number;
}

const legKey = (l: Leg) => `${l.from}>${l.to}>${l.only ?? ""}`;

/** Widths: every box as wide as the widest content; every gap as wide as its labels and turns need. */
function columnXs(
  legs: readonly Leg[],
  nodes: readonly Node[],
  byId: ReadonlyMap<string, Node>,
  lastCol: number,
): { boxW: number; colX: number[]; width: number } {
  const boxW =
    Math.max(...nodes.map((n) => Math.max(...n.lines.map((t, i) => textWidth(t, i === 0 ? 12 : 10.5, i === 0))))) + 20;
  const gapTrunks = (g: number) =>
    new Set(
      legs.filter((l) => byId.get(l.from)!.col <= g && byId.get(l.to)!.col > g).map((l) => `${l.from}>${l.only ?? ""}`),
    ).size;
  const gapLabels = (g: number) =>
    Math.max(0, ...legs.filter((l) => byId.get(l.to)!.col === g + 1).map((l) => textWidth(l.label, 10)));
  const gaps = Array.from({ length: lastCol }, (_, g) => 24 + gapTrunks(g) * 10 + gapLabels(g) + 16);
  const need = 2 * MARGIN + (lastCol + 1) * boxW + gaps.reduce((a, b) => a + b, 0);
  const spare = Math.max(0, W - need) / Math.max(1, lastCol);
  const colX: number[] = [MARGIN];
  for (let c = 1; c <= lastCol; c++) colX.push(colX[c - 1]! + boxW + gaps[c - 1]! + spare);
  return { boxW, colX, width: Math.max(W, need) };
}

/** Rows: each box as near its senders' height as the boxes above it in its column allow. */
function placeRows(
  legs: readonly Leg[],
  nodes: readonly Node[],
  byId: ReadonlyMap<string, Node>,
  colX: readonly number[],
  lastCol: number,
): void {
  const bottom = new Map<number, number>();
  for (let c = 0; c <= lastCol; c++) {
    const inCol = nodes.filter((n) => n.col === c);
    const want = (n: Node) => {
      // Level with a sender in the column just before, else with the highest sender.
      const from = legs
        .filter((l) => l.to === n.id)
        .map((l) => byId.get(l.from)!)
        .filter((p) => p.col < c);
      const near = from.filter((p) => p.col === c - 1);
      return from.length === 0 ? TOP : Math.min(...(near.length > 0 ? near : from).map((p) => p.y));
    };
    inCol.sort((a, b) => want(a) - want(b));
    for (const n of inCol) {
      n.x = colX[c]!;
      n.y = Math.max(want(n), (bottom.get(c) ?? TOP - BOX_GAP) + BOX_GAP);
      bottom.set(c, n.y + n.h);
    }
  }
}

function layOut(d: Deployment, volumes: readonly string[]): GraphLayout {
  const legs = graphLegs(d);
  const nodes = graphNodes(d, volumes, hopDepths(d, legs));
  const lastCol = nodes[nodes.length - 1]!.col;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  // Incoming ports in the order of their senders (fewer crossings); a box is tall enough for them.
  for (const l of legs) byId.get(l.to)!.inPorts.push(legKey(l));
  for (const n of nodes) n.h = Math.max(12 + n.lines.length * LINE, 18 * (n.inPorts.length + 1));
  const { boxW, colX, width } = columnXs(legs, nodes, byId, lastCol);
  placeRows(legs, nodes, byId, colX, lastCol);
  // Out-ports: one per style on the sender's right side.
  const outY = (n: Node, only: string | undefined) => {
    const styles = [...new Set(legs.filter((l) => l.from === n.id).map((l) => l.only ?? ""))];
    return n.y + (n.h * (styles.indexOf(only ?? "") + 1)) / (styles.length + 1);
  };
  // A leg skipping columns runs beneath all their boxes, each such leg on its own level.
  const corridorY = new Map<Leg, number>();
  for (const l of legs) {
    const [a, b] = [byId.get(l.from)!, byId.get(l.to)!];
    if (b.col > a.col + 1)
      corridorY.set(
        l,
        Math.max(...nodes.filter((n) => n.col > a.col && n.col < b.col).map((n) => n.y + n.h)) +
          14 +
          8 * corridorY.size,
      );
  }
  // Ports in the order the legs arrive from (top to bottom), so arrows into one box do not cross.
  const arrival = new Map(legs.map((l) => [legKey(l), corridorY.get(l) ?? outY(byId.get(l.from)!, l.only)]));
  for (const n of nodes) n.inPorts.sort((a, b) => arrival.get(a)! - arrival.get(b)!);
  const portY = (n: Node, key: string) => n.y + (n.h * (n.inPorts.indexOf(key) + 1)) / (n.inPorts.length + 1);
  return { legs, nodes, byId, lastCol, boxW, colX, width, corridorY, outY, portY };
}

/** Each leg's arrow and its label. */
function edgeParts(g: GraphLayout): string[] {
  const { byId, boxW, colX } = g;
  // Each sender has one turning line per gap and style, left in the gap; labels sit right of them.
  const trunkX = new Map<string, number>();
  const trunkOf = (gap: number, key: string) => {
    const id = `${gap}|${key}`;
    if (!trunkX.has(id))
      trunkX.set(id, colX[gap]! + boxW + 14 + [...trunkX.keys()].filter((k) => k.startsWith(`${gap}|`)).length * 10);
    return trunkX.get(id)!;
  };
  const parts: string[] = [];
  for (const l of g.legs) {
    const a = byId.get(l.from)!;
    const b = byId.get(l.to)!;
    const y0 = g.outY(a, l.only);
    const y1 = g.portY(b, legKey(l));
    const t0 = trunkOf(a.col, `${l.from}>${l.only ?? ""}`);
    let path = `M${a.x + boxW},${y0} H${t0}`;
    if (b.col === a.col + 1) path += ` V${y1}`;
    else {
      // Beneath every box of the columns it skips, then up in the gap before its target.
      path += ` V${g.corridorY.get(l)!} H${trunkOf(b.col - 1, `${l.from}>${l.only ?? ""}`)} V${y1}`;
    }
    path += ` H${b.x - 1}`;
    const edge = `${l.from}-${l.to}${l.only === undefined ? "" : `-${l.only}`}`;
    parts.push(
      `<path class="edge${l.only === undefined ? "" : " alt"}" data-edge="${esc(edge)}" d="${path}" ` +
        `marker-end="url(#${l.only === undefined ? "arrow" : "arrow-alt"})"/>`,
    );
    parts.push(
      `<text class="elabel" data-for="${esc(edge)}" x="${b.x - 10}" y="${y1 - 5}" text-anchor="end">` +
        `${esc(l.label)}</text>`,
    );
  }
  return parts;
}

/** The column heads, then every box with its lines. */
function nodeParts(d: Deployment, volumes: readonly string[], g: GraphLayout): string[] {
  const parts: string[] = [];
  const heads = [
    "writer",
    ...Array.from({ length: g.lastCol - 1 }, (_, i) => (i === 0 ? "first hop" : `hop ${i + 1}`)),
    "control",
  ];
  heads.forEach((h, c) => parts.push(`<text class="colhead" x="${g.colX[c]}" y="18">${esc(h)}</text>`));
  for (const n of g.nodes) {
    const attrs =
      n.kind === "controllers"
        ? ` data-controllers="${esc(volumes.map((v) => controllerIdOf(d, v)).join(" "))}"`
        : ` data-site="${esc(n.site!)}" data-actor="${esc(n.id)}"`;
    parts.push(
      `<g class="${n.kind === "controllers" ? "node" : "site"}${n.struck ? " struck" : ""}"${attrs}>` +
        `<rect x="${n.x}" y="${n.y}" width="${g.boxW}" height="${n.h}" rx="6"/>`,
    );
    n.lines.forEach((t, i) => {
      const cls = i === 0 ? "sname" : n.struck && i === n.lines.length - 1 ? "who struck-note" : "who";
      parts.push(`<text x="${n.x + 10}" y="${n.y + 18 + i * LINE}" class="${cls}">${esc(t)}</text>`);
    });
    parts.push(`</g>`);
  }
  return parts;
}

function graphLegend(d: Deployment): string {
  const cmp = d.waypointComparison;
  const key = (colour: string, text: string) => `<span><i style="background:${colour}"></i>${text}</span>`;
  const mainVolumes = volumesOf(d)
    .filter((v) => v !== cmp?.volume)
    .join(", ");
  return [
    key(GRAPH_COLOURS.leg, `custody leg of ${esc(mainVolumes)}`),
    ...(cmp === undefined
      ? []
      : [key(GRAPH_COLOURS.only, `${esc(cmp.volume)}: the same legs without ${esc(cmp.holder)}, plus this one`)]),
    key(GRAPH_COLOURS.struck, `struck region (${esc(d.failures.first)}, ${esc(d.failures.second)})`),
    `<span>label: one-way latency · transfer price</span>`,
  ].join(" ");
}

/** The custody graph (`svg#custody-graph`) and its legend entries. */
export function graphSvg(d: Deployment, volumes: readonly string[]): { svg: string; legend: string } {
  const g = layOut(d, volumes);
  const parts = [...edgeParts(g), ...nodeParts(d, volumes, g)];
  const height = Math.max(...g.nodes.map((n) => n.y + n.h), ...g.corridorY.values()) + 14;
  const marker = (id: string, colour: string) =>
    `<marker id="${id}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">` +
    `<path d="M0,0 L10,5 L0,10 z" fill="${colour}"/></marker>`;
  const svg =
    `<svg id="custody-graph" viewBox="0 0 ${g.width} ${height}" role="img" aria-label="custody graph">` +
    `<defs>${marker("arrow", GRAPH_COLOURS.leg)}${marker("arrow-alt", GRAPH_COLOURS.only)}</defs>` +
    `${parts.join("")}</svg>`;
  return { svg, legend: graphLegend(d) };
}

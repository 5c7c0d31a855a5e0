/**
 * The permission matrix of docs/security.md is the truth the server enforces: the table is parsed
 * from the page, and every cell is checked against `permissionsFor` (what `custody init` renders)
 * and tried on a real nats-server configured with those users — a publish and a subscription per
 * role and subject; the server's asynchronous permission errors say which it refused.
 */
import anyTest, { type TestFn } from "ava";
import { readFileSync } from "node:fs";
import { mayPublish, mayReceive, type PrincipalSpec } from "../../transport/security/index.ts";
import { permissionsFor } from "../../transport/security/principal-permissions.ts";
import { SUBJECT_FIELDS, SUBJECT_PREFIX } from "../../transport/protocol/subjects.ts";
import { startSecuredBus, type SecuredBus } from "./secured-bus.ts";

const test = anyTest as TestFn<{ bus: SecuredBus }>;

const REGION = "r1";
/** The reference deployment's principals, by the column header the page gives them. */
const COLUMNS: Record<string, PrincipalSpec> = {
  "writer w1": { role: "writer", id: "w1", scope: { controlRegion: REGION, volume: "v1", lanes: [{ lane: "l0", firstHops: ["h1"] }] } },
  "holder h1": { role: "holder", id: "h1", scope: { controlRegion: REGION, lanes: [{ volume: "v1", lane: "l0", downstream: ["h2"] }] } },
  "controller c1": { role: "controller", id: "c1", scope: { controlRegion: REGION, volumes: ["v1"], releaseTo: ["h1", "h2"] } },
  "repair r1": { role: "repair", id: "r1", scope: { controlRegion: REGION, volumes: ["v1"] } },
  "operator op": { role: "operator", id: "op", scope: { controlRegions: [REGION], commitRegions: [REGION] } },
  "base builder bb": { role: "base-builder", id: "bb", scope: { holder: "h2", volume: "v1" } },
  "replica rep1": { role: "replica", id: "rep1", scope: { volume: "v1", lanes: ["l0"] } },
};

interface Cell {
  readonly column: string;
  readonly subject: string;
  readonly pub: boolean;
  readonly sub: boolean;
}

/** The table under "### Permission matrix" in docs/security.md, one cell per role and row. */
function matrixFromPage(): { columns: string[]; subjects: string[]; cells: Cell[] } {
  const page = readFileSync(new URL("../../docs/security.md", import.meta.url), "utf8");
  const section = page.split("### Permission matrix")[1]?.split(/\n#{2,3} /)[0];
  if (section === undefined) throw new Error("docs/security.md has no Permission matrix section");
  const rows = section.split("\n").filter((l) => l.startsWith("|"));
  const split = (l: string) => l.slice(1, -1).split("|").map((c) => c.trim());
  const [header, , ...body] = rows;
  const columns = split(header!).slice(2);
  const cells: Cell[] = [];
  const subjects: string[] = [];
  for (const row of body) {
    const [, subjectCell, ...rest] = split(row);
    const subject = /^`([^`]+)`$/.exec(subjectCell!)?.[1];
    if (subject === undefined || rest.length !== columns.length) throw new Error(`malformed matrix row: ${row}`);
    subjects.push(subject);
    rest.forEach((text, i) => {
      if (!/^(pub|sub|pub sub|—)$/.test(text)) throw new Error(`cell ${JSON.stringify(text)} in ${row} is not pub, sub, "pub sub" or —`);
      cells.push({ column: columns[i]!, subject, pub: text.includes("pub"), sub: text.includes("sub") });
    });
  }
  return { columns, subjects, cells };
}

const matrix = matrixFromPage();

test.before(async (t) => {
  t.context.bus = await startSecuredBus(Object.entries(COLUMNS).map(([key, spec]) => ({ ...spec, key }) as PrincipalSpec & { key: string }));
});
test.after.always(async (t) => {
  await t.context.bus?.stop();
});

test("the page's matrix names every role of the reference deployment and has a row for every subject kind", (t) => {
  t.deepEqual(matrix.columns, Object.keys(COLUMNS));
  const kinds = new Set(matrix.subjects.filter((s) => s.startsWith(`${SUBJECT_PREFIX}.`)).map((s) => s.split(".")[2]));
  for (const kind of Object.keys(SUBJECT_FIELDS)) t.true(kinds.has(kind), `a row for ${kind}`);
});

test("every cell of the page's matrix is what permissionsFor derives", (t) => {
  const wrong = matrix.cells.filter((c) => {
    const spec = COLUMNS[c.column]!;
    const p = permissionsFor(spec.role, spec.id, spec.scope as never);
    return mayPublish(p, c.subject) !== c.pub || mayReceive(p, c.subject) !== c.sub;
  });
  t.deepEqual(wrong, [], "cells where the page and permissionsFor differ");
});

test("every cell of the page's matrix is what a real nats-server lets that user do: a publish and a subscription per cell", async (t) => {
  const { bus } = t.context;
  const wrong: string[] = [];
  for (const column of matrix.columns) {
    const c = await bus.connect(column);
    const mine = matrix.cells.filter((x) => x.column === column);
    for (const cell of mine) {
      c.transport.publish(cell.subject, new Uint8Array(0));
      c.transport.subscribe(cell.subject, () => undefined);
    }
    await c.transport.flush();
    // The server answers each refused publish or subscription with an error before the flush's PONG;
    // nats.js hands it to the status listener asynchronously, so wait for the expected count, then settle.
    const expected = mine.filter((x) => !x.pub).length + mine.filter((x) => !x.sub).length;
    for (let i = 0; i < 200 && c.violations.length < expected; i++) await new Promise((r) => setTimeout(r, 10));
    await c.transport.flush();
    await new Promise((r) => setImmediate(r));
    const refused = (op: "publish" | "subscription", subject: string) => c.violations.some((v) => v.operation === op && v.subject === subject);
    for (const cell of mine) {
      if (refused("publish", cell.subject) === cell.pub) wrong.push(`${column} pub ${cell.subject}: page says ${cell.pub ? "allowed" : "refused"}`);
      if (refused("subscription", cell.subject) === cell.sub) wrong.push(`${column} sub ${cell.subject}: page says ${cell.sub ? "allowed" : "refused"}`);
    }
    await c.transport.close();
  }
  t.deepEqual(wrong, [], "cells where the page and the server differ");
});

/**
 * `custody trace` on span files a real demo run wrote (fixtures/trace-run: the 17 spans of
 * vol-direct:180's tree, copied from a run's spans/*.jsonl). The writer re-sent the unit to three
 * holders that already held it; those holders' admit spans, from before holders named the range
 * of every admit, carry no range: each row still reads the unit's own range.
 */
import test from "ava";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runCliCaptured } from "../../cli/program.ts";
import type { TraceTree, TraceNode } from "../../actors/runtime/telemetry/trace-tree.ts";

const runDir = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "trace-run");

const walk = (n: TraceNode): TraceNode[] => [n, ...n.children.flatMap(walk)];

test("every admit row of a traced unit reads its real range, a re-send's admit says it stored nothing", async (t) => {
  const text = await runCliCaptured(["trace", "vol-direct:180", "--run", runDir]);
  t.is(text.code, 0, text.stderr);
  t.notRegex(text.stdout, /undefined/);
  const json = await runCliCaptured(["trace", "vol-direct:180", "--run", runDir, "--json"]);
  const tree = JSON.parse(json.stdout.trim()) as TraceTree;
  const admits = tree.roots.flatMap(walk).filter((n) => n.name === "holder.admit");
  t.is(admits.length, 6, "three first admits and three re-sends");
  t.true(admits.every((a) => a.detail.startsWith("seq 180..180")), admits.map((a) => a.detail).join(" | "));
  t.deepEqual(admits.map((a) => a.outcome).sort(), ["not-stored", "not-stored", "not-stored", "stored", "stored", "stored"]);
  // No strike in these spans: the unit is said to be in custody where it was admitted, nothing more.
  t.regex(text.stdout, /^fate: in custody at h-e1, h-e2, h-usw \(this run's span files record no strike\)$/m);
  t.regex(text.stdout, /^last hop: h-usw \(s-usw\) admitted it at \+532 ms$/m);
});

import test from "ava";
import { readFileSync } from "node:fs";
import { DeploymentError, loadDeployment, parseDeployment, topologyOf, volumesOf } from "../../tools/demo/deployment.ts";
import { formatStrikeTable } from "../../tools/demo/scenario-table.ts";
import { survivorsHold, unaccounted, type ControllerView, type HolderStats } from "../../tools/demo/settle.ts";
import { deploymentOfVolume, withoutHolder } from "../../tools/demo/waypoint-variant.ts";
import { blockData, contentThrough, lbaOf, lsnOffset, seedOf, workloadContentThrough, WorkloadOrderError } from "../../tools/demo/workload.ts";
import { workloadWrite } from "../../actors/runtime/workload.ts";
import { BLOCK_SIZE } from "../../volume/format.ts";

const path = new URL("../../examples/deployment.json", import.meta.url).pathname;

test("the example deployment streams two volumes, the second one's custody path leaving the waypoint out", (t) => {
  const d = loadDeployment(path);
  t.deepEqual(volumesOf(d), ["vol-demo", "vol-direct"]);
  t.is(deploymentOfVolume(d, "vol-demo"), d);
  const direct = deploymentOfVolume(d, "vol-direct");
  t.false(direct.holders.some((h) => h.id === "h-wp"));
  t.deepEqual(direct.writer.holders, ["h-e1", "h-e2", "h-eu", "h-usw"], "the writer sends to Europe where it sent to the waypoint");
  t.deepEqual(direct.holders.find((h) => h.id === "h-eu")!.upstream, ["w1"]);
  t.is(topologyOf(direct, "vol-direct").volume, "vol-direct");
  t.false("h-wp" in topologyOf(direct, "vol-direct").holderSites, "the comparison volume's controller does not count the waypoint");
});

test("leaving out an unknown holder, or naming one volume twice, is refused with invalid_deployment", (t) => {
  const d = loadDeployment(path);
  t.throws(() => withoutHolder(d, "h-ghost"), { instanceOf: DeploymentError, message: /h-ghost/ });
  const raw = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  t.throws(() => parseDeployment({ ...raw, waypointComparison: { holder: "h-wp", volume: "vol-demo" } }), { instanceOf: DeploymentError, message: /duplicate volume/ });
  t.throws(() => parseDeployment({ ...raw, waypointComparison: { holder: "h-nope", volume: "vol-x" } }), { instanceOf: DeploymentError, message: /h-nope/ });
});

const stats = (retained: [number, number][], inFlight = 0): HolderStats => ({ volumes: { v: { retained, bytes: 0 } }, inFlight, captured: [] });
const view = (receipted: Record<string, [number, number][]>): ControllerView => ({ status: null, receipted });

test("survivors are settled once their verified receipts together cover everything they hold together, units still travelling between them aside", (t) => {
  t.deepEqual(unaccounted(["a", "b"], ["v"], { a: stats([[1, 10]]), b: stats([[1, 8]]) }, { v: view({ a: [[1, 10]], b: [[1, 8]] }) }), []);
  // b admitted 9..10 a moment ago and has not receipted them yet, but a's receipt covers them; a still forwards two units to b.
  t.deepEqual(unaccounted(["a", "b"], ["v"], { a: stats([[1, 10]], 2), b: stats([[1, 10]]) }, { v: view({ a: [[1, 10]], b: [[1, 8]] }) }), []);
  const why = unaccounted(["a", "b"], ["v"], { a: stats([[1, 12]]), b: stats([[1, 8]]) }, { v: view({ a: [[1, 10]], b: [[1, 8]] }) });
  t.is(why.length, 1);
  t.regex(why[0]!, /^v: survivors hold \S*1.*12.*receipts show/, "11..12 are held without a verified receipt");
  t.deepEqual(unaccounted(["a"], ["v"], {}, { v: view({}) }), ["a: no stats"]);
  t.deepEqual(survivorsHold(["a", "b"], ["v"], { a: stats([[1, 4]]), b: stats([[3, 9]]) }), { v: [[1, 9]] });
});

test("a volume's k-th write has LSN k x blocks + offset, and the reference content replays exactly the writes through an LSN", (t) => {
  const acks = [0, 1, 2].map((k) => ({ volume: "v", k, lsn: 4 * k + 4, seq: k + 1 }));
  t.is(lsnOffset(acks, 4), 4);
  t.throws(() => lsnOffset([...acks, { volume: "v", k: 3, lsn: 17, seq: 4 }], 4), { instanceOf: WorkloadOrderError });
  const blocks = 4;
  const content = contentThrough("v", 64, blocks, 4, 8);
  const at = (k: number) => content.subarray(lbaOf(k, 64, blocks) * BLOCK_SIZE, (lbaOf(k, 64, blocks) + blocks) * BLOCK_SIZE);
  t.deepEqual(at(0), blockData(seedOf("v", 0), blocks));
  t.deepEqual(at(1), blockData(seedOf("v", 1), blocks));
  t.true(at(2).every((b) => b === 0), "write 2 (LSN 12) is past LSN 8");
  t.notDeepEqual(blockData(seedOf("v", 0), 1), blockData(seedOf("w", 0), 1), "volumes get different contents");
});

test("the strike table shows predicted and observed loss side by side and flags a mismatch", (t) => {
  const text = formatStrikeTable([
    { run: "with h-wp", volume: "vol-demo", acknowledged: 120, predictedCut: 118, recoveredCut: 118, cutAtStrike: 115 },
    { run: "without h-wp", volume: "vol-direct", acknowledged: 120, predictedCut: 115, recoveredCut: 116, cutAtStrike: 110 },
  ]);
  t.regex(text, /with h-wp\s+vol-demo\s+#120\s+#118\s+#118\s+119–120\s+119–120\s+exact\s+#115/);
  t.regex(text, /without h-wp\s+vol-direct\s+#120\s+#115\s+#116\s+116–120\s+117–120\s+MISMATCH/);
});

test("a workload volume's reference content through an LSN is the full replay of its writes, built from the last round over the slots only", (t) => {
  const blocks = 4;
  const blockCount = 40;
  const offset = 4;
  const replay = (lsn: number) => {
    const out = new Uint8Array(blockCount * BLOCK_SIZE);
    for (let k = 0; k * blocks + offset <= lsn; k++) {
      const w = workloadWrite(k, blocks, blockCount);
      out.set(w.data, w.lba * BLOCK_SIZE);
    }
    return out;
  };
  for (const lsn of [0, 3, 4, 7, 8, 40, 44, 123, 400, 1001]) t.deepEqual(workloadContentThrough(blockCount, blocks, offset, lsn), replay(lsn), `through LSN ${lsn}`);
});

import test from "ava";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCliCaptured } from "../../cli/program.ts";
import { authorizeReleases, evaluateScenario, evaluateState, parseEvaluationState, type EvaluationStateJson } from "../../policies/index.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { buildEvaluationState } from "../../actors/controller/evaluation-input.ts";
import { confirmedCut } from "../../actors/writer/confirmed-cut.ts";
import type { Holding } from "../../custody/index.ts";
import { AS_OF, coalescedState, observed } from "./coalesced-fixture.ts";

// Issue #22 item 1: a coalesced image may give a scenario its cut (and the report says so), but it
// never counts as possession of the raw records it omits — not in a raw cut, not for a release.

const sourceLost = { name: "source and raw holder lost", losses: [{ domain: "region:r1", kind: "site_destruction" as const }], deadlineSec: 3600, required: true };

/** Writer at `src` acknowledged l0 through 60; `raw` (r1) holds it all, `img` (r2) a coalesced image through `imageCut`. */
function state(imageCut: number): EvaluationStateJson {
  return coalescedState(imageCut, [sourceLost, { name: "image holder lost", losses: [{ domain: "region:r2", kind: "site_destruction" }], deadlineSec: 3600, required: true }]);
}

test("where only the coalesced image survives, the report names stream coalesced and the image's window end; elsewhere the raw cut stands", (t) => {
  const s = parseEvaluationState(state(48));
  const [lost, imgLost] = evaluateState(s).reports;
  t.is(lost!.stream, "coalesced");
  t.deepEqual(lost!.cut, { l0: 48 });
  t.deepEqual(lost!.contributors, ["img", "vault"]);
  t.is(imgLost!.stream, "raw");
  t.deepEqual(imgLost!.cut, { l0: 60 });
  // The raw evaluation of the same scenario (what release decisions use) keeps nothing past the base.
  const raw = evaluateScenario(s, s.scenarios[0]!);
  t.is(raw.stream, "raw");
  t.deepEqual(raw.cut, { l0: 0 });
});

test("a timeline takes its cut from the coalesced stream too where only the image outlives its steps; where the raw holder survives them, the raw cut stands", (t) => {
  const step = (region: string) => ({ afterSec: 60, losses: [{ domain: `region:${region}`, kind: "site_destruction" as const }] });
  const s = parseEvaluationState({
    ...coalescedState(48, [sourceLost]),
    timelines: [
      { name: "r1, then the raw holder's az", minIntervalSec: 30, events: [step("r1"), { afterSec: 60, losses: [{ domain: "az:a2", kind: "site_destruction" as const }] }], deadlineSec: 3600, required: true },
      { name: "r2, then the image's az", minIntervalSec: 30, events: [step("r2"), { afterSec: 60, losses: [{ domain: "az:b1", kind: "site_destruction" as const }] }], deadlineSec: 3600, required: true },
    ],
  });
  const [, onlyImage, rawSurvives] = evaluateState(s).reports;
  t.is(onlyImage!.kind, "timeline");
  t.is(onlyImage!.stream, "coalesced");
  t.deepEqual(onlyImage!.cut, { l0: 48 }, "the image's window end, on the vault's genesis base");
  t.is(rawSurvives!.stream, "raw");
});

test("a coalesced image is no successor: releasing the only raw copy is refused although an image covers it", (t) => {
  const s = parseEvaluationState(state(60));
  const [d] = authorizeReleases(s, [{ holder: "raw", lane: "l0", ranges: RangeSet.of(1, 60) }]);
  t.false(d!.allowed);
  t.true(d!.reasons.includes("no_successor"));
});

test("the controller's input turns a coalesced holding into an image of its raw lane (through its source cut), never a raw claim", (t) => {
  const topo = {
    volume: "v",
    lanes: ["l0"],
    writerSite: "src",
    sites: parseEvaluationState(state(1)).sites,
    holderSites: { raw: "s-raw", img: "s-img", vault: "s-v" },
    bases: [{ id: "genesis", holder: "vault", cut: { l0: 0 }, bytes: 0 }],
    keyAuthorities: [{ id: "kms", site: "s-v" }],
    links: [],
    recovery: { destination: "s-v", detectSec: 1, authorizeSec: 1, acquireCapacitySec: 1, persistSec: 1, validateSec: 1 },
    scenarios: [],
    timelines: [],
    staleAfterMs: 60_000,
    releasable: [],
  };
  const holding = (lane: string, retained: RangeSet, sourceCutSeq: number): Holding =>
    ({
      holderId: "img",
      incarnation: 1,
      volume: "v",
      lane,
      obligationId: `v-${lane}`,
      representation: "coalesced",
      residency: "disk",
      retained,
      issuedAt: AS_OF,
      evidenceAt: AS_OF,
      receipt: { payload: { representation: "coalesced", sourceCutSeq, manifest: { baseSnapshots: [], consistencyCuts: [] } } },
    }) as unknown as Holding;
  const hs = [holding("l0-coalesced", RangeSet.of(1, 40), 32)];
  const without = buildEvaluationState(topo, hs, { heads: { l0: 40 }, commits: [] }, AS_OF, new Set());
  t.deepEqual(without.holders.find((h) => h.id === "img")!.claims, [], "no raw claim");
  t.is(without.holders.find((h) => h.id === "img")!.coalesced, undefined, "a derived lane the topology does not name counts for nothing");
  const withMap = buildEvaluationState({ ...topo, coalesced: { "l0-coalesced": "l0" } }, hs, { heads: { l0: 40 }, commits: [] }, AS_OF, new Set());
  const img = withMap.holders.find((h) => h.id === "img")!;
  t.deepEqual(img.claims, []);
  t.deepEqual(img.coalesced!.map((c) => [c.lane, c.ranges.toString()]), [["l0", "1-32"]], "clipped at the receipt's source cut");
});

test("the writer confirms no raw record through a cut that comes from the coalesced stream", (t) => {
  const doc = (stream?: "coalesced") => ({ scenarios: [{ required: true, evidence: "observed", cut: [["l0", 48]], ...(stream ? { stream } : {}) }] }) as never;
  t.is(confirmedCut(doc(), "l0"), 48);
  t.is(confirmedCut(doc("coalesced"), "l0"), -1);
});

test("custody evaluate prints the stream each scenario's cut comes from", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-coalesced-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "state.json");
  writeFileSync(path, JSON.stringify(state(48)));
  const r = await runCliCaptured(["evaluate", path]);
  const lines = r.stdout.split("\n");
  t.regex(lines.find((l) => l.startsWith("scenario"))!, /\sevidence\s+stream\s/);
  t.regex(lines.find((l) => l.startsWith(sourceLost.name))!, /\sl0:48\s.*\sobserved\s+coalesced\s/);
  t.regex(lines.find((l) => l.startsWith("image holder lost"))!, /\sl0:60\s.*\sobserved\s+raw\s/);
  const json = JSON.parse((await runCliCaptured(["evaluate", "--json", path])).stdout.trimEnd().split("\n").pop()!);
  t.deepEqual(json.reports.map((x: { stream: string }) => x.stream), ["coalesced", "raw"]);
});

test("across two lanes the images give a cut only at a coalesced-stream manifest; a raw manifest (which may fall inside a window) never counts for them", (t) => {
  const one = coalescedState(48, [sourceLost]);
  const twoLanes = (coalescedManifests?: EvaluationStateJson["coalescedManifests"]): EvaluationStateJson => ({
    ...one,
    source: { site: "src", lanes: { l0: 60, l1: 30 } },
    holders: [
      { id: "raw", site: "s-raw", claims: [{ lane: "l0", ranges: [[1, 60]], residency: "disk", evidence: observed }, { lane: "l1", ranges: [[1, 30]], residency: "disk", evidence: observed }] },
      { id: "img", site: "s-img", claims: [], coalesced: [{ lane: "l0", ranges: [[1, 40]], residency: "disk", evidence: observed }, { lane: "l1", ranges: [[1, 20]], residency: "disk", evidence: observed }] },
      { id: "vault", site: "s-v", claims: [] },
    ],
    bases: [{ id: "genesis", holder: "vault", cut: { l0: 0, l1: 0 }, bytes: 0 }],
    // A raw manifest kept on the vault's disk, inside the images' windows (l0 35 of window ..40).
    manifests: [{ id: "m-raw", cut: { l0: 35, l1: 15 }, holders: ["vault"] }],
    ...(coalescedManifests === undefined ? {} : { coalescedManifests }),
  });
  const [without] = evaluateState(parseEvaluationState(twoLanes())).reports;
  t.deepEqual(without!.cut, { l0: 0, l1: 0 }, "no image manifest: only the base is consistent");
  t.is(without!.stream, "raw");
  const [withImage] = evaluateState(parseEvaluationState(twoLanes([{ id: "m-img", cut: { l0: 40, l1: 20 }, holders: ["img"], residency: "ram" }]))).reports;
  t.deepEqual(withImage!.cut, { l0: 40, l1: 20 });
  t.is(withImage!.stream, "coalesced");
  t.is(withImage!.manifest, "m-img");
  // A coalesced manifest names the raw lanes the images stand for; an unknown lane is refused.
  t.throws(() => parseEvaluationState(twoLanes([{ id: "m-bad", cut: { l0: 40, l9: 20 }, holders: ["img"] }])), { message: /coalescedManifests\[0\]\.cut\.l9/ });
});

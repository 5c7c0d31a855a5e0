/**
 * `custody holder fail` on a real JetStream control log: the operator's declaration of a failed
 * holder (its admitted failure domain) or of a zone (every active holder inside it), and the
 * refusals that commit nothing.
 */
import test from "ava";
import { systemClock } from "../../core/index.ts";
import { commitControlEvent, ControlLogFollower, generateHolderKeyPair, HolderStatus } from "../../custody/index.ts";
import { startNatsServer } from "../kit/index.ts";
import { closeNats, connectNats, initJetStreamControlLog } from "../../transport/index.ts";
import { custodyCli, type CustodyCliFailure } from "../kit/custody-cli.ts";
import { untilValue } from "../kit/until.ts";

let server: Awaited<ReturnType<typeof startNatsServer>>;
test.before(async () => {
  server = await startNatsServer();
});
test.after.always(async () => server?.stop());

let regions = 0;
/** A fresh control log with h1, h2 in aws/z1 and h3 in aws/z2. */
async function log() {
  const region = `fail${++regions}`;
  const nc = await connectNats({ servers: server.url, name: "holder-fail-test" });
  const { log: store } = await initJetStreamControlLog(nc, { region });
  const follower = new ControlLogFollower(store);
  for (const [h, d] of [["h1", "aws/z1/r1"], ["h2", "aws/z1/r2"], ["h3", "aws/z2/r1"]] as const) await commitControlEvent(store, follower, { controller: "operator", clock: systemClock }, () => ({ type: "admit_holder", holderId: h, incarnation: 1, publicKey: generateHolderKeyPair().publicKey, failureDomain: d }));
  const fail = async (...args: string[]) => JSON.parse((await custodyCli(["holder", "fail", "--server", server.url, "--region", region, "--json", ...args])).stdout) as { declared: string[]; scope: string; domain: string; controlSeq: number };
  // A long-lived reader learns of another process's commits from its tail subscription (or its
  // periodic check of the stream's last sequence), so it is read until it reached `seq`.
  const state = async (seq = 0) => untilValue(`the reader folded seq ${seq}`, 10_000, async () => {
    const s = await follower.refresh();
    return s.lastSeq >= seq ? s : undefined;
  });
  return { region, fail, state, close: () => closeNats(nc) };
}

test("a holder is declared failed with the failure domain it was admitted with; a zone takes every active holder inside it", async (t) => {
  const l = await log();
  t.teardown(l.close);
  const one = await l.fail("--holder", "h3");
  t.like(one, { declared: ["h3"], scope: "holder", domain: "aws/z2/r1" });
  const zone = await l.fail("--domain", "aws/z1");
  t.like(zone, { declared: ["h1", "h2"], scope: "zone", domain: "aws/z1" });
  t.true(zone.controlSeq > one.controlSeq);
  const s = await l.state(zone.controlSeq);
  t.deepEqual(["h1", "h2", "h3"].map((h) => s.holders[h]!.status), [HolderStatus.failed, HolderStatus.failed, HolderStatus.failed]);
});

test("an unknown holder, both or neither of --holder and --domain, or a domain deeper than region/az are refused and nothing is committed", async (t) => {
  const l = await log();
  t.teardown(l.close);
  const before = (await l.state()).lastSeq;
  const refused = async (...args: string[]) => (await t.throwsAsync(l.fail(...args))) as unknown as CustodyCliFailure;
  t.regex((await refused("--holder", "nobody")).stderr, /holder nobody was never admitted/);
  t.regex((await refused("--holder", "h1", "--domain", "aws/z1")).stderr, /exactly one of --holder and --domain/);
  t.regex((await refused()).stderr, /exactly one of --holder and --domain/);
  t.regex((await refused("--domain", "aws/z1/r1")).stderr, /a region or region\/az/);
  t.is((await l.state()).lastSeq, before);
  t.is((await l.state()).holders["h1"]!.status, HolderStatus.active);
});

import test from "ava";
import { checkAllProtectedRam, checkProtectedRamAdmission, PolicyInputError, type ProtectedRamNode } from "../../policies/index.ts";

const node = (id: string, over: Partial<ProtectedRamNode> = {}): ProtectedRamNode => ({
  id,
  queuedProtectedBytes: 4e9,
  reservedDrainBytesPerSec: 2e9,
  detectionSec: 0.5,
  persistenceCompletionSec: 1,
  marginSec: 1,
  usableHoldUpSec: 10,
  drainTarget: `nvme-${id}`,
  controller: `ctl-${id}`,
  link: `link-${id}`,
  powerSupply: `psu-${id}`,
  ...over,
});

test("a lone node is admitted when detection + bytes/throughput + persistence + margin < hold-up", (t) => {
  const v = checkProtectedRamAdmission([node("a")], { targets: {}, links: {} }, "a");
  t.true(v.admitted);
  t.is(v.requiredSec, 0.5 + 2 + 1 + 1);
  t.is(v.slackSec, 10 - 4.5);
  t.is(v.bottleneck, "own");
});

test("the bound is strict: equal to hold-up time is not admitted", (t) => {
  const v = checkProtectedRamAdmission([node("a", { usableHoldUpSec: 4.5 })], { targets: {}, links: {} }, "a");
  t.false(v.admitted);
});

test("nodes sharing a drain target are checked draining simultaneously", (t) => {
  const caps = { targets: { "shared-nvme": 2e9 }, links: {} };
  const alone = checkProtectedRamAdmission([node("a", { drainTarget: "shared-nvme", usableHoldUpSec: 8 })], caps, "a");
  t.true(alone.admitted); // 0.5 + 2 + 1 + 1 = 4.5 < 8
  const nodes = ["a", "b", "c"].map((id) => node(id, { drainTarget: "shared-nvme", usableHoldUpSec: 8 }));
  const v = checkProtectedRamAdmission(nodes, caps, "a");
  t.deepEqual(v.drainingTogether, ["a", "b", "c"]);
  t.is(v.drainSec, 6); // 12 GB through one 2 GB/s target
  t.is(v.bottleneck, "target:shared-nvme");
  t.false(v.admitted); // 0.5 + 6 + 1 + 1 = 8.5 >= 8
});

test("a shared power supply makes nodes drain together over their shared link", (t) => {
  const nodes = [node("a", { powerSupply: "psu-1", link: "tor-1" }), node("b", { powerSupply: "psu-1", link: "tor-1" }), node("c", { link: "tor-1" })];
  const caps = { targets: {}, links: { "tor-1": 1e9 } };
  const [a, , c] = checkAllProtectedRam(nodes, caps);
  t.is(a!.bottleneck, "link:tor-1");
  t.is(a!.drainSec, 12); // all three share the link, 12 GB at 1 GB/s
  t.false(a!.admitted);
  t.is(c!.drainSec, 12);
});

test("an unknown node or a zero drain throughput is a typed error", (t) => {
  t.throws(() => checkProtectedRamAdmission([node("a")], { targets: {}, links: {} }, "zz"), { instanceOf: PolicyInputError });
  t.throws(() => checkProtectedRamAdmission([node("a", { reservedDrainBytesPerSec: 0 })], { targets: {}, links: {} }, "a"), { instanceOf: PolicyInputError });
});

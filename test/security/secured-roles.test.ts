import anyTest, { type TestFn } from "ava";
import { fetchUnits } from "../../actors/repair/custody-reader.ts";
import { RangeSet } from "../../lanes/range-set.ts";
import { statusSubject } from "../../transport/protocol/subjects.ts";
import { eventually } from "../holder/holder-fixture.ts";
import { blockData } from "../e2e/e2e-fixture.ts";
import { AZ_CONTRACT, BLOCKS, deploySecured, LANE, VOL, type SecuredDeployment } from "./secured-deployment.ts";

const test = anyTest as TestFn<{ d: SecuredDeployment }>;

test.before(async (t) => {
  t.context.d = await deploySecured();
});
test.after.always(async (t) => {
  await t.context.d?.stop();
});

const laneOf = (d: SecuredDeployment, h: string) => d.holders.get(h)!.lane(VOL, LANE)!;

test.serial("on a bus with nkey users and TLS, every role does its job: the writer's units are receipted by its first hops and the forwarded hop, the controller commits and publishes status, a release frontier reaches the releasable holder, repair reads retained units", async (t) => {
  const d = t.context.d;
  const operatorStatus: unknown[] = [];
  d.conns.get("op")!.transport.subscribe(statusSubject(VOL), (m) => operatorStatus.push(m.subject));
  for (let i = 0; i < 20; i++) await d.writer.write(i % BLOCKS, blockData(i));
  const { heads } = await d.writer.sync(AZ_CONTRACT.name, 15_000);
  const head = heads[LANE]!;
  t.true(head >= 1);
  t.true(d.writer.protectedThrough(AZ_CONTRACT.name, LANE) >= head, "the writer counted signed receipts from holders outside its AZ");
  // h3 only ever hears from h2: forwarding ran under h2's permissions.
  await eventually(() => laneOf(d, "h3").retained.coversAll(RangeSet.of(1, head)), "h3 retains everything h2 forwarded", 10_000);
  // The controller appended (bootstrap, then releases) and published status the operator could read.
  t.true((await d.store.lastSeq()) >= 4, "the controller's appends are in the control stream");
  await eventually(() => operatorStatus.length > 0, "the operator sees the volume's status", 10_000);
  // The controller's release frontier reached h1 (only the controller may publish it).
  await eventually(() => !laneOf(d, "h1").released.isEmpty, "h1 released ranges on the controller's frontier", 15_000);
  // Repair reads h2's retained units over a request its permissions allow; h2 answers under allow_responses.
  const repair = await d.bus.connect("r1");
  const units = await fetchUnits(repair.transport, "h2", VOL, LANE, RangeSet.of(1, head));
  t.true(units.length > 0);
  for (const [key, c] of d.conns) t.deepEqual(c.violations, [], `${key} ran without a single permission violation`);
  t.deepEqual(repair.violations, []);
});

test.serial("an anonymous connection is refused, and so is a client that does not trust the deployment's CA", async (t) => {
  const { NatsTransport } = await import("../../transport/nats-transport.ts");
  const d = t.context.d;
  const anon = await NatsTransport.connect({ servers: d.bus.url, name: "anon", caFile: d.bus.caFile, maxReconnectAttempts: 0 }).then(
    (tr) => tr,
    (err: unknown) => err as Error,
  );
  t.true(anon instanceof Error, "no nkey, no connection");
  t.regex(String((anon as Error).message), /authorization/i);
  const untrusting = await NatsTransport.connect({ servers: d.bus.url, name: "plain", maxReconnectAttempts: 0 }).then(
    (tr) => tr,
    (err: unknown) => err as Error,
  );
  t.true(untrusting instanceof Error, "the server's certificate is not trusted without the CA");
});

/**
 * The production repair launcher on a real nats-server: a standby process's signed admission
 * requests are what the controller admits — only when the key the deployment issued signs them and
 * they name the configured site's failure domain; forged, foreign and malformed requests are
 * counted and never handed out, and a standby that never asks fails `prepare` with a typed error.
 */
import test from "ava";
import { AnnouncedStandbys, StandbyUnavailableError } from "../../actors/index.ts";
import { Counters, systemClock } from "../../core/index.ts";
import { encodeAdmissionRequest, generateHolderKeyPair } from "../../custody/index.ts";
import { admitSubject } from "../../transport/protocol/index.ts";
import { startNatsServer } from "../kit/index.ts";
import { NatsTransport } from "../../transport/index.ts";

const SITES = [{ id: "s-v", region: "vault", az: "vault-az1", host: "v-host", deps: [] }];
const DOMAIN = "vault/vault-az1/v-host";

let server: Awaited<ReturnType<typeof startNatsServer>>;
test.before(async () => {
  server = await startNatsServer({ jetstream: false });
});
test.after.always(async () => server?.stop());

let worlds = 0;
/** A launcher and a standby's connection; each world's standby has its own id (the tests run at once on one server). */
async function world(waitMs = 3_000, freshMs = 5_000) {
  const id = `h-v${++worlds}`;
  const key = generateHolderKeyPair();
  const launcherSide = await NatsTransport.connect({ servers: server.url, name: "ctl" });
  const standbySide = await NatsTransport.connect({ servers: server.url, name: "standby" });
  const counters = new Counters();
  const standby = { holderId: id, site: "s-v", publicKey: Buffer.from(key.publicKey).toString("hex") };
  const launcher = new AnnouncedStandbys({ transport: launcherSide, clock: systemClock, counters, standby: [standby], sites: SITES, waitMs, freshMs });
  await launcherSide.flush();
  const ask = async (o: { key?: typeof key; holderId?: string; subject?: string; incarnation?: number; failureDomain?: string; raw?: Uint8Array } = {}) => {
    const k = o.key ?? key;
    const req = { holderId: o.holderId ?? id, incarnation: o.incarnation ?? 1, publicKey: k.publicKey, failureDomain: o.failureDomain ?? DOMAIN, at: Date.now() };
    standbySide.publish(o.subject ?? admitSubject(id), o.raw ?? encodeAdmissionRequest(req, k.privateKey));
    await standbySide.flush();
    await launcherSide.flush();
  };
  const close = async () => {
    launcher.stop();
    await launcherSide.close();
    await standbySide.close();
  };
  return { key, standby, launcher, counters, ask, close };
}

test("the newest request signed by the deployment's key for the configured site is the admission; a restarted standby's higher incarnation replaces it", async (t) => {
  const w = await world();
  t.teardown(w.close);
  await w.ask({ incarnation: 1 });
  const a = await w.launcher.prepare(w.standby);
  t.deepEqual([a.holderId, a.incarnation, a.failureDomain, Buffer.from(a.publicKey).toString("hex")], [w.standby.holderId, 1, DOMAIN, w.standby.publicKey]);
  await w.ask({ incarnation: 3 });
  await w.ask({ incarnation: 2 }); // a late older request changes nothing
  t.is((await w.launcher.prepare(w.standby)).incarnation, 3);
});

test("prepare waits for a standby that has not asked yet and takes its first request", async (t) => {
  const w = await world(10_000);
  t.teardown(w.close);
  const pending = w.launcher.prepare(w.standby);
  await new Promise((r) => setTimeout(r, 100));
  await w.ask();
  t.is((await pending).incarnation, 1);
});

test("another key, another failure domain, another holder on the subject, garbage and a bad signature are counted and never admitted", async (t) => {
  const w = await world(500);
  t.teardown(w.close);
  const intruder = generateHolderKeyPair();
  await w.ask({ key: intruder });
  await w.ask({ failureDomain: "east/east-az1/other-host" });
  await w.ask({ holderId: "h-x" });
  await w.ask({ raw: new Uint8Array([0xdc, 0xff, 0xff, 1, 2, 3]) });
  const signed = encodeAdmissionRequest({ holderId: w.standby.holderId, incarnation: 1, publicKey: w.key.publicKey, failureDomain: DOMAIN, at: Date.now() }, intruder.privateKey);
  await w.ask({ raw: signed });
  const err = await t.throwsAsync(w.launcher.prepare(w.standby), { instanceOf: StandbyUnavailableError });
  t.is(err?.code, "standby_not_announced");
  const c = w.counters.snapshot();
  t.is(c["standby_key_mismatch"], 1);
  t.is(c["standby_domain_mismatch"], 1);
  t.is(c["standby_wrong_subject"], 1);
  t.is(c["standby_admission_bad_signature"], 1);
  t.is(c["standby_malformed"], 1, "the garbage");
  t.is(c["standby_not_announced"], 1);
});

test("a standby the deployment gave no key is never taken, whatever it announces", async (t) => {
  const w = await world(500);
  t.teardown(w.close);
  await w.ask();
  const err = await t.throwsAsync(w.launcher.prepare({ holderId: w.standby.holderId, site: "s-v" }), { instanceOf: StandbyUnavailableError });
  t.is(err?.code, "standby_key_unknown");
});

test("an announcement older than freshMs is not taken: the standby must ask again (its process may have died since)", async (t) => {
  const w = await world(400, 200);
  t.teardown(w.close);
  await w.ask();
  await new Promise((r) => setTimeout(r, 300));
  const err = await t.throwsAsync(w.launcher.prepare(w.standby), { instanceOf: StandbyUnavailableError });
  t.is(err?.code, "standby_not_announced");
  const pending = w.launcher.prepare(w.standby);
  await w.ask({ incarnation: 2 });
  t.is((await pending).incarnation, 2);
});

test("waits that time out leave nothing behind (a standby down for long is asked about again and again)", async (t) => {
  const w = await world(50);
  t.teardown(w.close);
  for (let i = 0; i < 5; i++) await t.throwsAsync(w.launcher.prepare(w.standby), { instanceOf: StandbyUnavailableError });
  t.is((w.launcher as unknown as { waiting: Map<string, unknown[]> }).waiting.size, 0);
});

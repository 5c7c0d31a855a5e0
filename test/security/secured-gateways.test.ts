import test from "ava";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { makeCertificates, permissionsFor, readNkeySeed, renderRegionSecurity, writeNkeySeed } from "../../transport/security/index.ts";
import { startSupercluster } from "../kit/nats-server.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { unitSubject } from "../../transport/protocol/subjects.ts";
import { eventually } from "../holder/holder-fixture.ts";

test("across a supercluster whose client, route and gateway connections all run TLS with verified certificates, a writer in one region reaches its first hop in another, and the gateways report TLS", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-sec-gw-"));
  const regions = ["east", "west"];
  const certs = await makeCertificates(join(dir, "tls"), regions.map((name) => ({ name, hosts: ["127.0.0.1", "localhost"] })));
  const w1 = writeNkeySeed(join(dir, "w1.nk"));
  const hw = writeNkeySeed(join(dir, "hw.nk"));
  const wPerms = permissionsFor("writer", "w1", { controlRegion: "east", volume: "v1", lanes: [{ lane: "l0", firstHops: ["hw"] }] });
  const hPerms = permissionsFor("holder", "hw", { controlRegion: "east", lanes: [{ volume: "v1", lane: "l0", downstream: [] }] });
  const users = [
    { nkey: w1.publicKey, permissions: wPerms },
    { nkey: hw.publicKey, permissions: hPerms },
  ];
  const files = (r: string) => ({ ...certs.servers[r]!, caFile: certs.caFile });
  const sc = await startSupercluster({
    regions,
    security: (r) => renderRegionSecurity(users, files(r)),
  });
  const open: NatsTransport[] = [];
  t.teardown(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await sc.stop();
  });
  const connect = async (region: string, seedFile: string, inboxPrefix: string, name: string) => {
    const c = await NatsTransport.connect({ servers: sc.regions[region]!.url, name, nkeySeed: readNkeySeed(seedFile).seed, caFile: certs.caFile, inboxPrefix, maxReconnectAttempts: 0 });
    open.push(c);
    return c;
  };
  const holder = await connect("west", hw.seedFile, hPerms.inboxPrefix, "hw");
  const writer = await connect("east", w1.seedFile, wPerms.inboxPrefix, "w1");
  const got: number[] = [];
  holder.subscribe(unitSubject("hw", "v1", "l0"), (m) => got.push(m.data[0]!));
  await holder.flush();
  // Interest crosses the gateway asynchronously: publish until the first message arrives.
  await eventually(() => {
    writer.publish(unitSubject("hw", "v1", "l0"), new Uint8Array([7]));
    return got.length > 0;
  }, "a unit crossed the TLS gateway", 10_000);
  t.is(got[0], 7);
  t.is(writer.permissionViolations, 0);
  const gw = (await (await fetch(`http://127.0.0.1:${sc.regions["east"]!.httpPort}/gatewayz`)).json()) as { outbound_gateways: Record<string, { connection?: { tls_version?: string } }> };
  t.truthy(gw.outbound_gateways["west"]?.connection?.tls_version, "the east→west gateway connection runs TLS");
  const connz = (await (await fetch(`http://127.0.0.1:${sc.regions["east"]!.httpPort}/connz`)).json()) as { connections: { name?: string; tls_version?: string }[] };
  t.truthy(connz.connections.find((c) => c.name === "w1")?.tls_version, "the writer's client connection runs TLS");
});

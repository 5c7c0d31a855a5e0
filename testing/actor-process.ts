/**
 * Runs one actor (a holder or a volume writer) as its own OS process, so a test or a bench can SIGKILL
 * it: whatever it held in memory is really gone. Usage: `node --import tsx testing/actor-process.ts <spec.json>`
 * (the spec: `ActorSpec` in actor-spec.ts).
 * It prints one JSON line when ready (writer: after its writes were acknowledged under the
 * contract) and then idles until killed.
 */
import { readFileSync } from "node:fs";
import { startHolder } from "../actors/index.ts";
import { startVolumeWriter } from "../actors/index.ts";
import { systemClock } from "../core/index.ts";
import { privateKeyFromPkcs8, publicKeyFromRaw } from "../custody/index.ts";
import { NatsTransport } from "../transport/index.ts";
import { SmartWalVolume } from "../volume/index.ts";
import type { ActorSpec } from "./actor-spec.ts";
import { blockData } from "./block-data.ts";

export type { ActorSpec } from "./actor-spec.ts";

const spec = JSON.parse(readFileSync(process.argv[2]!, "utf8")) as ActorSpec;
const keys = new Map(Object.entries(spec.peers).map(([id, hex]) => [id, publicKeyFromRaw(Buffer.from(hex, "hex"))]));
const peers = { key: (h: string, inc: number) => (inc === 1 ? keys.get(h) : undefined), incarnation: (h: string) => (keys.has(h) ? 1 : undefined) };

if (spec.kind === "holder") {
  const t = await NatsTransport.connect({ servers: spec.url, name: spec.config.holderId });
  await startHolder(spec.config, { transport: t, clock: systemClock, privateKey: privateKeyFromPkcs8(Buffer.from(spec.privateKeyHex, "hex")), peers });
  process.stdout.write(JSON.stringify({ ready: true, pid: process.pid }) + "\n");
} else {
  await SmartWalVolume.create(spec.dir, { blockCount: spec.blockCount, walCapacity: 4096 });
  const volume = await SmartWalVolume.open(spec.dir);
  const t = await NatsTransport.connect({ servers: spec.url, name: spec.config.writerId });
  const w = startVolumeWriter(spec.config, { transport: t, clock: systemClock, volume, dataKey: Buffer.from(spec.dataKeyHex, "hex"), peers });
  const acked: { lba: number; seed: number; lsn: number }[] = [];
  for (const x of spec.writes) acked.push({ ...x, lsn: (await w.write(x.lba, blockData(x.seed))).lsn });
  const { heads } = await w.sync(spec.contract, 15_000);
  process.stdout.write(JSON.stringify({ ready: true, pid: process.pid, acked, heads }) + "\n");
}
setInterval(() => undefined, 60_000); // idle until SIGKILL

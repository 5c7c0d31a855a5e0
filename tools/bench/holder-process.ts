/**
 * bench:holder's out-of-process hop: one RAM holder in its own node process, as a deployment runs
 * it, so the JetStream peer rows (whose storage work runs in nats-server's process) are compared
 * with a holder that pays the same process boundaries, and the security rows see the cost as a
 * deployment pays it (each process its own TLS). Started by `processChain` with
 *   node --import tsx tools/bench/holder-process.ts <nats-url> <lane> <holder-id> <unit-bytes>
 * and, for a secured server, BENCH_HOLDER_CONNECT (JSON connect options: nkey seed file, CA file,
 * inbox prefix) and BENCH_WRITER_KEY (hex raw public key: units must carry the writer's
 * attestation) in its environment; it prints `ready` once subscribed and stops cleanly on SIGTERM.
 */
import { startHolder } from "../../actors/index.ts";
import { systemClock } from "../../core/index.ts";
import { generateHolderKeyPair, publicKeyFromRaw, WriterKeyring } from "../../custody/index.ts";
import { NatsTransport } from "../../transport/index.ts";
import { readNkeySeed } from "../../transport/security/index.ts";
import { benchHolderConfig, VOLUME } from "./holder-chain.ts";

const [url, lane, holderId, unitBytes] = process.argv.slice(2);
if (!url || !lane || !holderId || !Number.isSafeInteger(Number(unitBytes))) {
  console.error("usage: holder-process.ts <nats-url> <lane> <holder-id> <unit-bytes>");
  process.exit(1);
}
const key = generateHolderKeyPair();
const publicKey = publicKeyFromRaw(key.publicKey);
const peers = {
  key: (h: string, inc: number) => (h === holderId && inc === 1 ? publicKey : undefined),
  incarnation: (h: string) => (h === holderId ? 1 : undefined),
};
const { nkeySeedFile, ...secured } = process.env["BENCH_HOLDER_CONNECT"]
  ? (JSON.parse(process.env["BENCH_HOLDER_CONNECT"]) as Record<string, string>)
  : {};
const transport = await NatsTransport.connect({
  ...secured,
  ...(nkeySeedFile ? { nkeySeed: readNkeySeed(nkeySeedFile).seed } : {}),
  servers: url,
  name: holderId,
});
const writerKey = process.env["BENCH_WRITER_KEY"];
const writerKeys = writerKey ? new WriterKeyring().name(VOLUME, 0, Buffer.from(writerKey, "hex")) : undefined;
const holder = await startHolder(benchHolderConfig(holderId, 0, lane, "writer", undefined, Number(unitBytes)), {
  transport,
  clock: systemClock,
  privateKey: key.privateKey,
  peers,
  ...(writerKeys ? { writerKeys } : {}),
});
await transport.flush();
process.stdout.write("ready\n");
process.once("SIGTERM", () => {
  void holder
    .stop()
    .then(() => transport.close())
    .finally(() => process.exit(0));
});

/**
 * bench:holder's out-of-process hop: one RAM holder in its own node process, as a deployment runs
 * it, so the JetStream peer rows (whose storage work runs in nats-server's process) are compared
 * with a holder that pays the same process boundaries. Started by `processChain` with
 *   node --import tsx bench/holder-process.ts <nats-url> <lane> <holder-id> <unit-bytes>
 * it prints `ready` once subscribed and stops cleanly on SIGTERM.
 */
import { startHolder } from "../actors/index.ts";
import { systemClock } from "../core/index.ts";
import { generateHolderKeyPair, publicKeyFromRaw } from "../custody/index.ts";
import { NatsTransport } from "../transport/index.ts";
import { benchHolderConfig } from "./holder-chain.ts";

const [url, lane, holderId, unitBytes] = process.argv.slice(2);
if (!url || !lane || !holderId || !Number.isSafeInteger(Number(unitBytes))) {
  console.error("usage: holder-process.ts <nats-url> <lane> <holder-id> <unit-bytes>");
  process.exit(1);
}
const key = generateHolderKeyPair();
const publicKey = publicKeyFromRaw(key.publicKey);
const peers = { key: (h: string, inc: number) => (h === holderId && inc === 1 ? publicKey : undefined), incarnation: (h: string) => (h === holderId ? 1 : undefined) };
const transport = await NatsTransport.connect({ servers: url, name: holderId });
const holder = await startHolder(benchHolderConfig(holderId, 0, lane, "writer", undefined, Number(unitBytes)), { transport, clock: systemClock, privateKey: key.privateKey, peers });
await transport.flush();
process.stdout.write("ready\n");
process.once("SIGTERM", () => {
  void holder
    .stop()
    .then(() => transport.close())
    .finally(() => process.exit(0));
});

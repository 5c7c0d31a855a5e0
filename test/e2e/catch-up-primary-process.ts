// Child process playing a primary volume's writer side for replica catch-up: opens the volume at
// <dir> (recovering it), serves catch-up for <volume> to <replicas> (comma-separated) on its own
// NATS connection, sealing chunks of at most <maxChunkBytes> with the data key <keyHex>, prints
// "serving" and runs until SIGTERM (then stops the service and closes the volume).
import { startPrimaryCatchUp } from "../../actors/replica/primary-catch-up-service.ts";
import { NatsTransport } from "../../transport/nats-transport.ts";
import { SmartWalVolume } from "../../volume/smartwal-volume.ts";

const [url, dir, volume, replicas, keyHex, maxChunkBytes] = process.argv.slice(2);
const vol = await SmartWalVolume.open(dir!);
const transport = await NatsTransport.connect({ servers: url!, name: "primary-process" });
const service = await startPrimaryCatchUp({ volume: volume!, replicas: replicas!.split(","), maxChunkBytes: Number(maxChunkBytes) }, { transport, volume: vol, dataKey: Buffer.from(keyHex!, "hex") });
process.on("SIGTERM", () => {
  service.stop();
  const counters = JSON.stringify(service.counters.snapshot());
  void vol
    .close()
    .then(() => transport.close())
    .then(() => {
      process.stdout.write(`counters ${counters}\n`);
      process.exit(0);
    });
});
process.stdout.write("serving\n");

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { systemClock } from "../core/index.ts";
import { CreditSender, type NatsTransport } from "../transport/index.ts";
import { freshLane, VOLUME, type Chain } from "./holder-chain.ts";

/** A one-hop chain whose holder runs in its own process (bench/holder-process.ts); `pid` is its process. */
export async function processChain(url: string, unitBytes: number, connect: (name: string) => Promise<NatsTransport>): Promise<Chain & { pid: number }> {
  const { lane, ids } = freshLane(1);
  const child = spawn(process.execPath, ["--import", "tsx", new URL("./holder-process.ts", import.meta.url).pathname, url, lane, ids[0]!, String(unitBytes)], { stdio: ["ignore", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const ready = new Promise<void>((resolve, reject) => {
    lines.on("line", (l) => l === "ready" && resolve());
    child.once("exit", (code) => reject(new Error(`bench holder process exited with ${code} before it was ready`)));
  });
  await ready;
  const wt = await connect(`writer-${lane}`);
  const writer = new CreditSender({ transport: wt, clock: systemClock, sender: "writer", holder: ids[0]!, volume: VOLUME, lane, retryMs: 20 }).attach();
  return {
    writer,
    ids,
    lane,
    pid: child.pid!,
    async close() {
      writer.close();
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    },
  };
}

import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { systemClock } from "../../core/index.ts";
import { writerUnitSigner } from "../../custody/index.ts";
import { CreditSender } from "../../actors/index.ts";
import { freshLane, VOLUME, type Chain, type ChainMode } from "./holder-chain.ts";

/** How the holder process connects: the server, and for a secured one the bench user's credentials. */
export interface ChildConnect {
  readonly servers: string;
  /** The bench user's nkey seed file (mode 0600). */
  readonly nkeySeedFile?: string;
  readonly caFile?: string;
  readonly inboxPrefix?: string;
}

/**
 * A one-hop chain whose holder runs in its own process (tools/bench/holder-process.ts); `pid` is its
 * process. The writer connects with `mode` (and signs its units when `mode.signed`), the holder with `child`.
 */
export async function processChain(
  child: ChildConnect,
  unitBytes: number,
  mode: ChainMode,
): Promise<Chain & { pid: number }> {
  const { lane, ids } = freshLane(1);
  const { servers, ...secured } = child;
  const env = {
    ...process.env,
    BENCH_HOLDER_CONNECT: JSON.stringify(secured),
    ...(mode.signed ? { BENCH_WRITER_KEY: Buffer.from(mode.signed.publicKey).toString("hex") } : {}),
  };
  const holder = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      new URL("./holder-process.ts", import.meta.url).pathname,
      servers,
      lane,
      ids[0]!,
      String(unitBytes),
    ],
    { stdio: ["ignore", "pipe", "inherit"], env },
  );
  const lines = createInterface({ input: holder.stdout! });
  const ready = new Promise<void>((resolve, reject) => {
    lines.on("line", (l) => l === "ready" && resolve());
    holder.once("exit", (code) => reject(new Error(`bench holder process exited with ${code} before it was ready`)));
  });
  await ready;
  const wt = await mode.connect(`writer-${lane}`);
  const attest = mode.signed && writerUnitSigner(mode.signed.privateKey);
  const writer = new CreditSender({
    transport: wt,
    clock: systemClock,
    sender: "writer",
    holder: ids[0]!,
    volume: VOLUME,
    lane,
    retryMs: 20,
    ...(attest ? { attest } : {}),
  }).attach();
  return {
    writer,
    ids,
    lane,
    pid: holder.pid!,
    async close() {
      writer.close();
      const exited = once(holder, "exit");
      holder.kill("SIGTERM");
      await exited;
    },
  };
}

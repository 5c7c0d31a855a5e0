import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";
import { processRunning } from "../../core/index.ts";
import { LOOPBACK } from "../../transport/index.ts";

/** Ports handed out in this process, so two servers started back to back never get the same one. */
const handedOutPorts = new Set<number>();

/** Lowest port the kernel hands out as an ephemeral (client source) port; 32768 where it cannot be read. */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 1024 ? low : 32_768;
  } catch {
    return 32_768;
  }
}
const PICK_FROM = 10_000;

/**
 * Ports the Fetch standard blocks ("bad ports", at or above 1024): Node's `fetch` refuses them
 * without connecting, so a server's monitor handed 10080 was never seen healthy (CI, run 51).
 */
export const FETCH_BLOCKED: ReadonlySet<number> = new Set([
  1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);
const PICK_BELOW = ephemeralLow();

/** True when `port` can be bound on loopback right now (`0`: the OS picks; resolves the port bound, or 0). */
function bindable(port: number): Promise<number> {
  return new Promise<number>((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(0));
    srv.listen(port, LOOPBACK, () => {
      const addr = srv.address();
      const p = typeof addr === "object" && addr !== null ? addr.port : 0;
      srv.close(() => resolve(p));
    });
  });
}

/** Where test processes reserve the ports they hand out, one file per port holding the owner's pid. */
const RESERVATIONS = join(tmpdir(), "custody-test-ports");

/**
 * Reserves `port` for this process among every test process on the machine (AVA runs files in
 * processes of their own, and each keeps only its own `handedOutPorts`): two files picking the
 * same free port within the moment before either server listened collided (EADDRINUSE). A
 * reservation whose process is gone is taken over.
 */
function reserve(port: number): boolean {
  const file = join(RESERVATIONS, String(port));
  try {
    mkdirSync(RESERVATIONS, { recursive: true });
    writeFileSync(file, String(process.pid), { flag: "wx" });
    return true;
  } catch (err) {
    // no shared reservations here: the in-process set still holds
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") return true;
    const owner = Number(readFileSync(file, "utf8"));
    if (owner === process.pid || (Number.isInteger(owner) && owner > 0 && processRunning(owner))) return false;
    writeFileSync(file, String(process.pid));
    return true;
  }
}

/**
 * Picks a currently free loopback TCP port for a server to listen on later; never one handed out
 * before in this process. It is drawn below the kernel's ephemeral range: a port the OS picks
 * (listen on 0) comes from that range, which is also where every outgoing connection takes its
 * source port, so under load such a port was sometimes taken by a client connection before the
 * server meant for it listened (EADDRINUSE). Reserved across test processes too (`reserve`).
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const wanted =
      PICK_BELOW - PICK_FROM > 1_000 ? PICK_FROM + Math.floor(Math.random() * (PICK_BELOW - PICK_FROM)) : 0;
    const port = await bindable(wanted);
    if (port > 0 && !FETCH_BLOCKED.has(port) && !handedOutPorts.has(port) && reserve(port)) {
      handedOutPorts.add(port);
      return port;
    }
  }
  throw new Error("could not find a free loopback port");
}

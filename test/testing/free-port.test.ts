import test from "ava";
import { FETCH_BLOCKED, freePort } from "../kit/free-port.ts";

/** True when Node's fetch refuses the port itself ("bad port") rather than trying to connect. */
async function fetchRefuses(port: number): Promise<boolean> {
  try {
    await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(200) });
    return false;
  } catch (err) {
    return (err as { cause?: { message?: string } }).cause?.message === "bad port";
  }
}

test("regression CI run 51: every unprivileged port Node's fetch refuses is one freePort never hands out", async (t) => {
  // 10080 was handed to a server's monitor; /healthz could never be fetched and the start timed out.
  for (const port of FETCH_BLOCKED) t.true(await fetchRefuses(port), `fetch refuses ${port}`);
  for (const port of [1718, 1721, 6001, 6670, 10079, 10081]) t.false(await fetchRefuses(port), `fetch allows ${port}`);
});

test("freePort hands out distinct loopback ports outside the fetch-blocked list", async (t) => {
  const ports = new Set<number>();
  for (let i = 0; i < 50; i++) ports.add(await freePort());
  t.is(ports.size, 50);
  for (const p of ports) t.false(FETCH_BLOCKED.has(p));
});

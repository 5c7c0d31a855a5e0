/**
 * The attack run: starts a secured network (`custody init`, nats-servers, `custody run` for every
 * role), waits until writes are receipted, then runs each attack and judges it: refused (the
 * attack's own evidence), state unchanged (no process restarted or gone, admitted holders and
 * obligations as before, nothing the attack aimed at), and every actor still serving (the
 * writer's next writes reach both holders and the controller keeps evaluating).
 */
import { networkDecoders, timeDecoders } from "./decode-bombs.ts";
import { attacks } from "./attacks.ts";
import type { Attack, AttackContext } from "./attack.ts";
import { figure, grownCounters, invariantChanges, StateReader, type NetworkState } from "./network-state.ts";
import { connectAs, type AttackerConnection } from "./principal.ts";
import { startSecuredNetwork, type SecuredNetwork } from "./secured-network.ts";

/** One attack's outcome. */
export interface AttackRow {
  readonly attack: string;
  readonly refused: boolean;
  /** How it was refused (or why it counts as not refused). */
  readonly evidence: string;
  /** What changed because of it (empty when nothing did). */
  readonly changed: readonly string[];
  /** Every actor served a new write after it. */
  readonly serving: boolean;
}

/** The report `npm run attack -- --json` prints on its last line. */
export interface AttackReport {
  readonly attacks_tried: number;
  readonly attacks_refused: number;
  readonly state_changed: number;
  /** Slowest decoder on a 1 MiB adversarial input, in-process (tools/attack/decode-bombs.ts). */
  readonly max_decode_ms: number;
  readonly rows: readonly AttackRow[];
}

/** Generous bounds: they only end a hung wait, they measure nothing. */
const SERVING_MS = 60_000;
const QUIET_MS = 3_000;

/** Sum of a holder's highest retained or released sequence on the lane (what it has taken custody of). */
function custodyMax(s: NetworkState, holder: string, laneKey: string): number {
  return Math.max(
    figure(s, `holder/${holder}`, `${laneKey}.retainedMax`),
    figure(s, `holder/${holder}`, `${laneKey}.releasedMax`),
  );
}

/**
 * Waits until the writer wrote past what it had at `from`, both holders took custody of it, and the
 * controller evaluated again. Each condition is remembered once seen: a stats reply that misses one
 * read's window (a loaded machine) must not hide progress another read saw. Returns what never
 * happened, or undefined when all did.
 */
async function stillServing(
  read: () => Promise<NetworkState>,
  from: NetworkState,
  laneKey: string,
): Promise<string | undefined> {
  const head = figure(from, "writer/w1", "head");
  const evals = figure(from, "controller/ctl-1", "evaluations");
  const seen = { writer: 0, "h-e1": 0, "h-w1": 0, evaluations: 0 };
  const end = Date.now() + SERVING_MS;
  for (;;) {
    const s = await read();
    seen.writer = Math.max(seen.writer, figure(s, "writer/w1", "head"));
    for (const h of ["h-e1", "h-w1"] as const) seen[h] = Math.max(seen[h], custodyMax(s, h, laneKey));
    seen.evaluations = Math.max(seen.evaluations, figure(s, "controller/ctl-1", "evaluations"));
    const missing = [
      ...(seen.writer > head ? [] : [`writer head stayed at ${seen.writer} (was ${head})`]),
      ...(["h-e1", "h-w1"] as const)
        .filter((h) => seen[h] <= head)
        .map((h) => `${h} custody stayed at ${seen[h]} (writer head was ${head})`),
      ...(seen.evaluations > evals ? [] : [`controller evaluations stayed at ${seen.evaluations}`]),
    ];
    if (missing.length === 0) return undefined;
    if (Date.now() > end)
      return `${missing.join("; ")}; processes answering: ${Object.keys(s.processes).sort().join(", ")}`;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Runs one attack and judges it: refused, state unchanged, and every actor still serving afterwards. */
async function tryAttack(
  ctx: AttackContext,
  attack: Attack,
  laneKey: string,
  log: (line: string) => void,
): Promise<AttackRow> {
  const before = await ctx.read();
  let evidence: string;
  let changed: string[] = [];
  let refused = false;
  try {
    const r = await attack.run(ctx, before);
    refused = r.refusal !== undefined;
    evidence = r.refusal ?? r.note ?? "not refused";
    changed = [...(r.changed ?? [])];
  } catch (err) {
    evidence = `attack failed to run: ${(err as Error).message}`;
  }
  // Serving means progress after the attack: past what the network had when it ended, not
  // only past what it had before it (writes made during the attack prove nothing about after).
  const notServing = await stillServing(ctx.read, await ctx.read(), laneKey);
  const serving = notServing === undefined;
  changed.push(...invariantChanges(before, await ctx.read()));
  if (!serving) {
    changed.push(`an actor stopped serving: ${notServing}`);
    log(`not serving after ${attack.name}; process logs:\n${ctx.net.logs().slice(-6000)}`);
  }
  log(
    `${refused && changed.length === 0 ? "refused" : "NOT REFUSED"}  ${attack.name}: ` +
      `${evidence}${changed.length ? ` — changed: ${changed.join("; ")}` : ""}`,
  );
  return { attack: attack.name, refused, evidence, changed, serving };
}

export async function runAttacks(o: { only?: RegExp; log?: (line: string) => void } = {}): Promise<AttackReport> {
  const log = o.log ?? (() => undefined);
  const timings = timeDecoders(networkDecoders());
  const maxDecodeMs = Math.max(...timings.map((t) => t.ms));
  log(`decoders: slowest ${maxDecodeMs.toFixed(1)} ms over ${timings.length} (decoder, 1 MiB input) pairs`);
  // A second volume with its own controller on the same control log, for the volume-scope attacks.
  const net = await startSecuredNetwork({ secondVolume: true });
  const conns = new Map<string, AttackerConnection>();
  const as = async (instance: string, region = instance.includes("h-w1") ? "west" : "east") => {
    const key = `${instance}@${region}`;
    if (!conns.has(key)) conns.set(key, await connectAs(net, instance, region));
    return conns.get(key)!;
  };
  const rows: AttackRow[] = [];
  let reader: StateReader | undefined;
  try {
    reader = await StateReader.open(net, await as("operator"));
    const read = () => reader!.read();
    const laneKey = `${net.volume}/${net.lane}`;
    log("network up: waiting for receipted writes");
    const notServing = await stillServing(read, await read(), laneKey);
    if (notServing !== undefined) throw new Error(`the network never served a write: ${notServing}\n${net.logs()}`);
    // Counters that move in a quiet interval are progress, not rejections.
    const progress = new Set<string>();
    const q0 = await read();
    await new Promise((r) => setTimeout(r, QUIET_MS));
    for (const k of grownCounters(q0, await read()).keys()) progress.add(k);
    const ctx: AttackContext = {
      net,
      as,
      read,
      rejections: (a, b) => [...grownCounters(a, b)].filter(([k]) => !progress.has(k)).map(([k, n]) => `${k} +${n}`),
    };
    for (const attack of attacks()) {
      if (o.only !== undefined && !o.only.test(attack.name)) continue;
      rows.push(await tryAttack(ctx, attack, laneKey, log));
    }
  } finally {
    await reader?.close().catch(() => undefined);
    for (const c of conns.values()) await c.transport.close().catch(() => undefined);
    await net.stop();
  }
  return {
    attacks_tried: rows.length,
    attacks_refused: rows.filter((r) => r.refused).length,
    state_changed: rows.filter((r) => r.changed.length > 0).length,
    max_decode_ms: Math.round(maxDecodeMs * 100) / 100,
    rows,
  };
}

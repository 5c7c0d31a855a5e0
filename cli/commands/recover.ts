import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { fetchUnits } from "../../actors/index.ts";
import { recoverVolume } from "../../actors/index.ts";
import { CustodyError } from "../../core/index.ts";
import { RangeSet } from "../../lanes/index.ts";
import type { TransportUnit } from "../../lanes/index.ts";
import { NatsTransport } from "../../transport/index.ts";
import { checkToken } from "../../protocol/index.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import { nextStatus, positiveInt } from "./status.ts";
import { operatorConnectOptions, withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";
import { registerRecovery, type RecoveryRegistration } from "../../actors/index.ts";
import { cliIo } from "../cli-io.ts";

/** Thrown when the status document names no such scenario, or it has nothing to recover. */
export class ScenarioUnavailableError extends CustodyError {
  constructor(volume: string, scenario: string, why: string) {
    super("scenario_unavailable", `scenario ${JSON.stringify(scenario)} of ${volume}: ${why}`, { volume, scenario });
  }
}

/** Thrown when fetches failed and what the others served does not reach the predicted cut. */
export class RecoveryShortError extends CustodyError {
  constructor(volume: string, predicted: Record<string, number>, recovered: Record<string, number>, fetchErrors: Record<string, string>, why?: string) {
    super("recovery_short", `recovered ${volume} only through ${JSON.stringify(recovered)} of the predicted ${JSON.stringify(predicted)}${why ? ` (${why})` : ""}; fetches failed: ${Object.entries(fetchErrors).map(([h, e]) => `${h} (${e})`).join(", ")}`, { volume, predicted, recovered, fetchErrors });
  }
}

/** Reads a 32-byte data key given as hex in a file (as issued by the key authority to this principal). */
function readKey(path: string): Uint8Array {
  const hex = readFileSync(path, "utf8").trim();
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new CustodyError("invalid_key_file", "the key file must hold 64 hex digits (an AES-256 data key)", { path });
  return Uint8Array.from(Buffer.from(hex, "hex"));
}

/** Parses `lane=seq,lane=seq`. */
function parseCut(v: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const part of v.split(",")) {
    const [lane, seq] = part.split("=");
    const n = Number(seq);
    if (!lane || !Number.isSafeInteger(n) || n < 0) throw new CustodyError("invalid_option", `--base-cut must be lane=seq[,lane=seq], got ${v}`, { option: "base-cut" });
    out[checkToken(lane, "lane")] = n;
  }
  return out;
}

/** Registers `custody recover --volume V --scenario S --to <site>`. */
export function register(program: Command): void {
  withOperatorConnection(program
    .command("recover"))
    .description("materialize a volume at a destination from a base plus the WAL ranges that survive a named scenario; verifies every digest")
    .requiredOption("--volume <volume>", "volume id")
    .requiredOption("--scenario <name>", "scenario name from the volume's status document")
    .requiredOption("--to <site>", "destination site")
    .requiredOption("--dir <path>", "destination directory of the new volume")
    .requiredOption("--blocks <n>", "volume size in 4 KiB blocks")
    .requiredOption("--key-file <path>", "hex data key issued by the key authority to this recovery")
    .option("--base <dir>", "base snapshot volume directory")
    .option("--base-cut <lane=seq,...>", "cut the base snapshot contains")
    .option("--region <region>", "register the read in this region's control log first: no release of what it reads until it ends")
    .option("--lease-sec <n>", "how long the registration may outlive a recovery that dies (the controller then ends it)", "600")
    .option("--timeout <ms>", "per-request timeout", "5000")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (o: OutputOptions & OperatorConnectionOptions & { volume: string; scenario: string; to: string; dir: string; blocks: string; keyFile: string; base?: string; baseCut?: string; timeout: string; region?: string; leaseSec: string }) => {
        checkToken(o.volume, "volume");
        const timeoutMs = positiveInt("timeout", o.timeout);
        const leaseMs = positiveInt("lease-sec", o.leaseSec) * 1000;
        const blockCount = positiveInt("blocks", o.blocks);
        const dataKey = readKey(o.keyFile);
        if ((o.base === undefined) !== (o.baseCut === undefined)) throw new CustodyError("invalid_option", "--base and --base-cut go together", { option: "base" });
        const t = await NatsTransport.connect(operatorConnectOptions(o, "custody-recover"));
        let registration: RecoveryRegistration | undefined;
        try {
          const doc = await nextStatus(t, o.volume, timeoutMs);
          const sc = doc.scenarios.find((s) => s.name === o.scenario);
          if (sc === undefined) throw new ScenarioUnavailableError(o.volume, o.scenario, "not in the status document");
          if (sc.cut === null) throw new ScenarioUnavailableError(o.volume, o.scenario, "no cut survives it");
          const predicted = Object.fromEntries(sc.cut);
          const lanes = Object.keys(predicted);
          if (o.region !== undefined) {
            registration = await registerRecovery([operatorConnectOptions(o, "custody-recover").servers].flat()[0]!, o.region, { volume: o.volume, cut: predicted, sources: sc.contributors, leaseMs, by: `custody recover ${o.scenario} -> ${o.to}` });
          }
          const units: TransportUnit[] = [];
          const fetched: Record<string, number> = {};
          // A failed fetch is reported per holder, never taken for "that holder has nothing".
          const fetchErrors: Record<string, string> = {};
          for (const holder of sc.contributors) {
            for (const lane of lanes) {
              try {
                const got = await fetchUnits(t, holder, o.volume, lane, RangeSet.of(0, predicted[lane]!), timeoutMs);
                fetched[holder] = (fetched[holder] ?? 0) + got.length;
                units.push(...got);
              } catch (err) {
                const e = err as CustodyError;
                fetchErrors[holder] = `${e.code ?? "error"}: ${String((e.detail as { cause?: unknown } | undefined)?.cause ?? e.message)}`;
                cliIo().stderr(`custody recover: fetch from ${holder} (lane ${lane}) failed: ${fetchErrors[holder]}\n`);
              }
            }
          }
          const base = o.base !== undefined ? { dir: o.base, cut: parseCut(o.baseCut!) } : undefined;
          const failed = Object.keys(fetchErrors).length > 0;
          const r = await recoverVolume({ volume: o.volume, dir: o.dir, blockCount, lanes, dataKey, units, base, upTo: predicted }).catch((err: unknown) => {
            // A gap where a holder could not be read is that holder's failure, not missing custody.
            throw failed ? new RecoveryShortError(o.volume, predicted, {}, fetchErrors, (err as Error).message) : err;
          });
          if (failed && lanes.some((l) => (r.cut[l] ?? 0) < predicted[l]!)) throw new RecoveryShortError(o.volume, predicted, r.cut, fetchErrors);
          const out = { volume: o.volume, scenario: o.scenario, destination: o.to, dir: o.dir, predicted, recovered: r.cut, lsn: r.lsn, unitsVerified: r.unitsVerified, recordsApplied: r.recordsApplied, baseUsed: r.baseUsed, fetched, fetchErrors };
          printResult(o, out, lanes.map((l) => ({ lane: l, predicted: predicted[l], recovered: r.cut[l] })), `recovered ${o.volume} at ${o.to} (${o.dir}): lsn ${r.lsn}, ${r.unitsVerified} units verified, ${r.recordsApplied} records applied${r.baseUsed ? ", base used" : ""}`);
        } finally {
          await registration?.end().catch((err: unknown) => cliIo().stderr(`custody recover: could not end the recovery's hold (the controller ends it at its lease): ${String(err)}\n`));
          await t.close();
        }
      }),
    );
}

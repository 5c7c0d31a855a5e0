import type { Command } from "commander";
import { requestFailover } from "../../actors/index.ts";
import { checkToken } from "../../transport/protocol/index.ts";
import { cliIo } from "../cli-io.ts";
import { action } from "../output.ts";
import {
  connectOperatorTransport,
  withOperatorConnection,
  type OperatorConnectionOptions,
} from "../operator-connection.ts";
import { CustodyCliError } from "../cli-error.ts";
import { positiveInt } from "./status.ts";

interface FailoverOptions extends OperatorConnectionOptions {
  volume: string;
  term: string;
  cut: string[];
  timeout: string;
}

/** `lane=seq` pairs as lane → recovered cut; throws CustodyCliError for a malformed or repeated one. */
export function parseCuts(pairs: readonly string[]): Record<string, number> {
  const cuts: Record<string, number> = {};
  for (const p of pairs) {
    const m = /^([^=]+)=(\d+)$/.exec(p);
    if (m === null || !Number.isSafeInteger(Number(m[2])))
      throw new CustodyCliError(`--cut must be lane=seq, got ${p}`, { option: "cut" });
    const lane = checkToken(m[1]!, "lane");
    if (Object.hasOwn(cuts, lane)) throw new CustodyCliError(`--cut names lane ${lane} twice`, { option: "cut" });
    cuts[lane] = Number(m[2]);
  }
  return cuts;
}

/**
 * `custody failover`: the operator asks the volume's controller (over NATS, `custody.v1.failover.<volume>`)
 * to record a writer failover of the lanes named by `--cut` to `--term`, each continuing from its
 * recovered cut, and prints the committed plan as one JSON line: where the new term starts on each
 * lane (`firstSeq`) and the control-log sequences that record it. A refusal (a lane of another
 * volume, a cut above what holders receipted, a term that does not advance) exits 1 with the
 * controller's code, nothing committed; the same request again answers the same plan.
 */
export function register(program: Command): void {
  withOperatorConnection(program.command("failover"))
    .description(
      "Ask a volume's controller to record a writer failover (new term, recovered cut per lane) and print the " +
        "plan as JSON",
    )
    .requiredOption("--volume <volume>", "the volume whose writer fails over")
    .requiredOption("--term <n>", "the new writer term (above every failover term of these lanes)")
    .requiredOption("--cut <lane=seq...>", "each failed-over lane with the recovered cut it continues from")
    .option("--timeout <ms>", "how long to wait for the controller's answer", "10000")
    .action(
      action(async (o: FailoverOptions) => {
        const volume = checkToken(o.volume, "volume");
        const term = positiveInt("term", o.term);
        const recoveredCut = parseCuts(o.cut);
        const transport = await connectOperatorTransport(o, "custody-failover");
        try {
          const plan = await requestFailover(
            transport,
            volume,
            { lanes: Object.keys(recoveredCut), term, recoveredCut },
            { timeoutMs: positiveInt("timeout", o.timeout) },
          );
          cliIo().stdout(JSON.stringify(plan) + "\n");
        } finally {
          await transport.close();
        }
      }),
    );
}

import type { Command } from "commander";
import { withOperatorLog } from "../operator-log.ts";
import { action, printResult, type OutputOptions } from "../output.ts";
import {
  commitControlEvent,
  commitControlEventRetrying,
  FailureScope,
  HolderStatus,
  inFailureDomain,
} from "../../custody/index.ts";
import { publicKeyFromRaw } from "../../custody/index.ts";
import { CustodyCliError } from "../cli-error.ts";
import { operatorAccess, withOperatorKey, type OperatorKeyOptions } from "../operator-signing.ts";
import { withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";

interface AdmitOptions extends OutputOptions, OperatorKeyOptions, OperatorConnectionOptions {
  region: string;
  holder: string;
  incarnation: string;
  publicKey: string;
  failureDomain: string;
}

/**
 * `custody holder admit`: the operator admits a holder incarnation (its key and failure domain) by
 * committing `admit_holder` to the region's control log — the first admission of a holder, a new
 * key, or a move, which the controller's key-continuity policy leaves to an operator. The log's own
 * fold refuses an incarnation that is not above the admitted one (exit 1, nothing committed).
 *
 * `custody holder fail`: the operator declares a holder (or every active holder of a zone or
 * region) failed by committing `declare_failure`; its ranges stop backing releases, and a controller
 * with a `repair` section copies what it held onto a standby.
 */
export function register(program: Command): void {
  const holder = program.command("holder").description("Operator commands for holders");
  withOperatorConnection(withOperatorKey(holder.command("admit")))
    .description("Commit admit_holder (holder, incarnation, public key, failure domain) to a region's control log")
    .requiredOption("--region <region>", "control-log region")
    .requiredOption("--holder <id>", "holder id")
    .requiredOption("--incarnation <n>", "the incarnation to admit (above the admitted one)")
    .requiredOption("--public-key <hex>", "raw Ed25519 public key, 64 hex digits (custody receipts keygen prints it)")
    .requiredOption("--failure-domain <region/az/host>", "where the holder runs")
    .option("--json", "one JSON object on one line")
    .action(action(admitHolder));

  withOperatorConnection(withOperatorKey(holder.command("fail")))
    .description(
      "Commit declare_failure: a holder, or every active holder of a zone or region, is gone; its controller " +
        "repairs onto a standby",
    )
    .requiredOption("--region <region>", "control-log region")
    .option("--holder <id>", "the failed holder (scope holder; the domain is the failure domain it was admitted with)")
    .option("--domain <region[/az]>", "a failed zone (region/az) or region: every active holder admitted inside it")
    .option("--json", "one JSON object on one line")
    .action(action(declareFailure));
}

/** `custody holder admit`: checks the incarnation and key, commits `admit_holder`, prints it. */
async function admitHolder(o: AdmitOptions): Promise<void> {
  const incarnation = Number(o.incarnation);
  if (!Number.isSafeInteger(incarnation) || incarnation < 1)
    throw new CustodyCliError(`--incarnation must be a positive integer, got ${o.incarnation}`, {
      option: "incarnation",
    });
  if (!/^[0-9a-f]{64}$/i.test(o.publicKey))
    throw new CustodyCliError("--public-key must be 64 hex digits", { option: "public-key" });
  const publicKey = new Uint8Array(Buffer.from(o.publicKey, "hex"));
  publicKeyFromRaw(publicKey); // throws InvalidKeyError for bytes that are not a key
  const { seq } = await withOperatorLog(o, "custody-cli-admit", ({ store, follower }) =>
    commitControlEvent(store, follower, operatorAccess(o).who, () => ({
      type: "admit_holder",
      holderId: o.holder,
      incarnation,
      publicKey,
      failureDomain: o.failureDomain,
    })),
  );
  const out = { admitted: o.holder, incarnation, controlSeq: seq };
  printResult(o, out, [out]);
}

type FailOptions = OutputOptions &
  OperatorKeyOptions &
  OperatorConnectionOptions & {
    region: string;
    holder?: string;
    domain?: string;
  };

/** `custody holder fail`: checks the scope, commits `declare_failure` for the holders it covers now, prints them. */
async function declareFailure(o: FailOptions): Promise<void> {
  if ((o.holder === undefined) === (o.domain === undefined))
    throw new CustodyCliError("give exactly one of --holder and --domain", { option: "holder" });
  const depth = o.domain?.split("/").length ?? 0;
  if (o.domain !== undefined && (depth > 2 || o.domain.split("/").some((p) => p.length === 0)))
    throw new CustodyCliError(`--domain must be a region or region/az, got ${o.domain}`, { option: "domain" });
  let declared: { scope: FailureScope; domain: string; holderIds: string[] } | undefined;
  const { seq } = await withOperatorLog(o, "custody-cli-fail", ({ store, follower }) =>
    commitControlEventRetrying(store, follower, operatorAccess(o).who, (s) => {
      if (o.holder !== undefined) {
        const h = s.holders[o.holder];
        if (h === undefined)
          throw new CustodyCliError(`holder ${o.holder} was never admitted in ${o.region}`, {
            holder: o.holder,
          });
        declared = { scope: FailureScope.holder, domain: h.failureDomain, holderIds: [o.holder] };
      } else {
        const d = o.domain!;
        const holderIds = Object.values(s.holders)
          .filter((h) => h.status === HolderStatus.active && inFailureDomain(h.failureDomain, d))
          .map((h) => h.holderId)
          .sort();
        declared = { scope: depth === 1 ? FailureScope.region : FailureScope.zone, domain: d, holderIds };
      }
      return { type: "declare_failure", ...declared };
    }),
  );
  const out = {
    declared: declared!.holderIds,
    scope: declared!.scope,
    domain: declared!.domain,
    controlSeq: seq,
  };
  printResult(o, out, [{ ...out, declared: out.declared.join(",") || "(none active)" }]);
}

import { writeFileSync } from "node:fs";
import type { Command } from "commander";
import { action, printResult, type OutputOptions } from "../output.ts";
import { CustodyCliError } from "../cli-error.ts";
import {
  ControlLogFollower,
  generateHolderKeyPair,
  INITIAL_CONTROL_STATE,
  releaseFrontiers,
  type ControlState,
} from "../../custody/index.ts";
import { closeNats } from "../../transport/index.ts";
import { openJetStreamControlLog } from "../../transport/index.ts";
import { connectOperator, withOperatorConnection, type OperatorConnectionOptions } from "../operator-connection.ts";

interface ControlOptions extends OutputOptions, OperatorConnectionOptions {
  region: string;
  headSeq?: string;
  headHash?: string;
}

/**
 * Replays a region's control log from scratch; with --head-seq/--head-hash, refuses a log behind or
 * forked from that head.
 */
async function replayControlLog(o: ControlOptions): Promise<ControlState> {
  if ((o.headSeq === undefined) !== (o.headHash === undefined))
    throw new CustodyCliError("give both --head-seq and --head-hash, or neither");
  let seen = INITIAL_CONTROL_STATE;
  if (o.headSeq !== undefined && o.headHash !== undefined) {
    const seq = Number(o.headSeq);
    if (!Number.isSafeInteger(seq) || seq < 1)
      throw new CustodyCliError(`--head-seq must be a positive integer, got ${o.headSeq}`, { option: "head-seq" });
    if (!/^[0-9a-f]{64}$/.test(o.headHash))
      throw new CustodyCliError("--head-hash must be 64 lowercase hex digits", { option: "head-hash" });
    seen = { ...INITIAL_CONTROL_STATE, lastSeq: seq, headHash: o.headHash };
  }
  const nc = await connectOperator(o, "custody-cli-control");
  try {
    const follower = new ControlLogFollower(await openJetStreamControlLog(nc, { region: o.region }));
    const state = await follower.replay();
    if (seen.lastSeq > 0) {
      // Check the replayed log against the head the caller saw, with the follower's own rules.
      await new ControlLogFollower(await openJetStreamControlLog(nc, { region: o.region }), seen).refresh();
    }
    return state;
  } finally {
    await closeNats(nc);
  }
}

function summary(s: ControlState) {
  return {
    lastSeq: s.lastSeq,
    headHash: s.headHash,
    topologyEpoch: s.topologyEpoch,
    policyGeneration: s.policyGeneration,
    holders: Object.values(s.holders).map((h) => ({
      holderId: h.holderId,
      incarnation: h.incarnation,
      status: h.status,
      failureDomain: h.failureDomain,
      publicKey: Buffer.from(h.publicKey).toString("hex"),
    })),
    obligations: Object.values(s.obligations).map((o) => ({
      obligationId: o.obligationId,
      volume: o.volume,
      lane: o.lane,
      representation: o.representation,
      responsible: Object.fromEntries(Object.entries(o.responsible).map(([h, r]) => [h, r.toJSON()])),
    })),
    releaseFrontiers: releaseFrontiers(s).map((f) => ({
      obligationId: f.obligationId,
      holderId: f.holderId,
      released: f.released.toJSON(),
    })),
    leases: Object.entries(s.leases?.volumes ?? {}).map(([volume, l]) => ({ volume, ...l })),
    rejected: s.rejected,
  };
}

/** `custody control show`: the replayed log's holders, obligations, release frontiers, leases and rejections. */
async function showControl(o: ControlOptions): Promise<void> {
  const s = summary(await replayControlLog(o));
  const rows = [
    ...s.holders.map((h) => ({
      kind: "holder",
      id: h.holderId,
      detail: `incarnation ${h.incarnation}, ${h.status}, ${h.failureDomain}`,
    })),
    ...s.obligations.map((ob) => ({
      kind: "obligation",
      id: ob.obligationId,
      detail: `${ob.volume}/${ob.lane} ${ob.representation} responsible ${JSON.stringify(ob.responsible)}`,
    })),
    ...s.releaseFrontiers.map((f) => ({
      kind: "released",
      id: `${f.obligationId}/${f.holderId}`,
      detail: JSON.stringify(f.released),
    })),
    ...s.leases.map((l) => ({
      kind: "lease",
      id: l.volume,
      detail: `${l.holder} at term ${l.term} since seq ${l.sinceSeq}, last heartbeat seq ${l.heartbeatSeq}`,
    })),
    ...s.rejected.map((r) => ({ kind: "rejected", id: `seq ${r.seq}`, detail: `${r.code}: ${r.message}` })),
  ];
  printResult(
    o,
    s,
    rows,
    `control log ${o.region}: head ${s.lastSeq} ${s.headHash.slice(0, 16)}…, epoch ${s.topologyEpoch}, ` +
      `generation ${s.policyGeneration}`,
  );
}

/** Registers `custody control show|verify` and `custody receipts keygen`. */
export function register(program: Command): void {
  const control = program.command("control").description("Inspect a region's fenced control log on JetStream");
  const common = (c: Command) =>
    withOperatorConnection(c)
      .requiredOption("--region <region>", "control-log region (stream CUSTODY_CTRL_<region>)")
      .option("--head-seq <n>", "a head sequence seen before: refuse a log behind or forked from it")
      .option("--head-hash <hex>", "the hash of that head event")
      .option("--json", "one JSON object on one line");

  common(
    control.command("show").description("Replay the log and print holders, obligations and release frontiers"),
  ).action(action(showControl));

  common(
    control
      .command("verify")
      .description("Replay the log, check its hash chain (and a seen head); exit 1 on regression or fork"),
  ).action(
    action(async (o: ControlOptions) => {
      const s = await replayControlLog(o);
      printResult(o, { ok: true, lastSeq: s.lastSeq, headHash: s.headHash }, [
        { ok: true, lastSeq: s.lastSeq, headHash: s.headHash },
      ]);
    }),
  );

  const receipts = program.command("receipts").description("Receipt signing keys");
  receipts
    .command("keygen")
    .description(
      "Generate an Ed25519 holder key: writes the PKCS#8 private key to --out, prints the public key for admit_holder",
    )
    .requiredOption("--out <file>", "where to write the private key (PKCS#8 DER, mode 0600)")
    .option("--json", "one JSON object on one line")
    .action(
      action(async (o: OutputOptions & { out: string }) => {
        const k = generateHolderKeyPair();
        writeFileSync(o.out, k.privateKey.export({ format: "der", type: "pkcs8" }), { mode: 0o600, flag: "wx" });
        const publicKey = Buffer.from(k.publicKey).toString("hex");
        printResult(o, { privateKeyFile: o.out, publicKey }, [{ privateKeyFile: o.out, publicKey }]);
      }),
    );
}

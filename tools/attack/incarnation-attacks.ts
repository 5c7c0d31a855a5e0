/**
 * One identity, one process (issue #46), tried on the running network:
 * - the same holder started a second time beside the running one, on its state directory (the
 *   outside test's finding: a service manager restarting a unit while a hand-started copy runs):
 *   refused at start, naming the running process, before it claims an incarnation;
 * - a receipt batch signed with the holder's own key for an incarnation the control log has
 *   superseded (what a process that should have been fenced would send): counted for nothing,
 *   and the controller's status document lists that incarnation as fenced.
 */
import { join } from "node:path";
import { RangeSet } from "../../lanes/index.ts";
import { receiptSubject } from "../../transport/protocol/index.ts";
import { DeployedProcess } from "../../test/kit/index.ts";
import type { Attack, AttackContext } from "./attack.ts";
import { forgedReceiptBatch } from "./forged-receipt.ts";
import { custody } from "./secured-network.ts";

/** Generous bound on a refused start (it ends before connecting): it only ends a hung wait. */
const START_MS = 60_000;
/** The exit code of a start refused for a locked state directory (cli/commands/run.ts EXIT_STATE_DIR_LOCKED). */
const EXIT_STATE_DIR_LOCKED = 5;

/** Whether the controller's status document (as `custody status` prints it) lists `holder`#`incarnation` as fenced. */
async function statusListsFenced(ctx: AttackContext, holder: string, incarnation: number): Promise<boolean> {
  const printed = await custody(["status", ctx.net.volume, "--operator-config", ctx.net.operatorConfig, "--json"]);
  const doc = JSON.parse(printed.trim().split("\n").at(-1)!) as { fenced?: { holder: string; incarnation: number }[] };
  return (doc.fenced ?? []).some((f) => f.holder === holder && f.incarnation === incarnation);
}

const secondStartOnStateDir: Attack = {
  name: "the same holder started again beside the running one, on its state directory",
  async run(ctx, before) {
    const running = before.processes["holder/h-e1"];
    if (running === undefined) return { note: "holder h-e1 is not running" };
    const second = DeployedProcess.role(
      "holder-h-e1-again",
      "holder",
      join(ctx.net.roleDir("holder-h-e1"), "config.json"),
    );
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      second.ended,
      new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), START_MS))),
    ]);
    clearTimeout(timer);
    if (ended === undefined || second.running) {
      await second.stop();
      return { changed: ["a second h-e1 process kept running"] };
    }
    const line = second.log.split("\n").find((l) => l.startsWith("error [state_dir_locked]:"));
    const names =
      line !== undefined &&
      line.includes(`held by pid ${running.pid} (holder h-e1 incarnation ${running.incarnation})`);
    if (ended.code !== EXIT_STATE_DIR_LOCKED || !names)
      return { note: `second start exited ${ended.code}: ${second.log.slice(-500)}` };
    return { refusal: `exit ${ended.code}: ${line}` };
  },
};

const supersededIncarnationReceipts: Attack = {
  name: "receipt batch of a superseded incarnation, signed with the holder's own key",
  async run(ctx, before) {
    const running = before.processes["holder/h-e1"];
    if (running?.incarnation === undefined || running.incarnation < 2)
      return { note: "holder h-e1 has no superseded incarnation" };
    const stale = running.incarnation - 1;
    const c = await ctx.as("holder-h-e1");
    const batch = forgedReceiptBatch(
      ctx.net,
      "h-e1",
      RangeSet.of(1, 50_000_000),
      join(ctx.net.roleDir("holder-h-e1"), "holder.key"),
      stale,
    );
    const end = Date.now() + 8_000;
    for (;;) {
      c.transport.publish(receiptSubject(ctx.net.volume, ctx.net.lane), batch);
      await c.transport.flush();
      const counted = ctx.rejections(before, await ctx.read()).filter((n) => n.includes("stale_incarnation"));
      if (counted.length > 0) {
        // The controller names the old incarnation in its next status document.
        const listed = await statusListsFenced(ctx, "h-e1", stale);
        const status = listed ? `; status lists h-e1#${stale} as fenced` : "; status does not list it";
        return { refusal: `counted: ${counted.join(", ")}${status}` };
      }
      if (Date.now() > end) return {};
      await new Promise((r) => setTimeout(r, 500));
    }
  },
};

/** The attacks on holder identity, in the order they run. */
export function incarnationAttacks(): Attack[] {
  return [secondStartOnStateDir, supersededIncarnationReceipts];
}

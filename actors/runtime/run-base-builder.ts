import { readDataKeyFile } from "./data-key-file.ts";
import { BaseBuilder, BaseBuildTimeoutError } from "../index.ts";
import { Counters } from "../../core/index.ts";
import { connectRole } from "./connect.ts";
import { serveProcessStats } from "./process-stats.ts";
import { lockStateDir } from "./state-dir-lock.ts";
import type { BaseBuilderRoleConfig } from "./role-config.ts";

/** A base builder running as a process. */
export interface RunningBaseBuilder {
  readonly builder: BaseBuilder;
  readonly counters: Counters;
  readonly lost: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a base builder: every `intervalMs` it re-announces its current base (a restarted holder
 * learns it again) and builds a newer one when at least `minNewSeqs` new sequences are there.
 * A failed build (holder unreachable) is counted and tried again next time.
 */
export async function runBaseBuilder(cfg: BaseBuilderRoleConfig): Promise<RunningBaseBuilder> {
  // One builder per bases directory: two would build and announce over each other (StateDirLockedError).
  const lock = lockStateDir(cfg.dir, { role: "base-builder", id: `base-builder-${cfg.holder}` });
  const { transport, lost } = await connectRole(cfg.nats, `base-builder-${cfg.holder}`).catch((err: unknown) => {
    lock.release();
    throw err;
  });
  const counters = new Counters();
  const builder = new BaseBuilder(
    {
      holderId: cfg.holder,
      volume: cfg.volume,
      lane: cfg.lane,
      blockCount: cfg.blockCount,
      dir: cfg.dir,
      minNewSeqs: cfg.minNewSeqs,
      ...(cfg.maxSeqsPerBuild !== undefined ? { maxSeqsPerBuild: cfg.maxSeqsPerBuild } : {}),
      ...(cfg.buildTimeoutMs !== undefined ? { buildTimeoutMs: cfg.buildTimeoutMs } : {}),
    },
    transport,
    counters,
    readDataKeyFile(cfg.dataKeyFile),
  );
  let busy: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    builder.announce();
    busy = builder.build().catch((err: unknown) => {
      const code = (err as { code?: string }).code ?? "failed";
      counters.inc(code.startsWith("base_build_") ? code : `base_build_${code}`);
      if (err instanceof BaseBuildTimeoutError)
        process.stderr.write(`base-builder ${cfg.holder}: warning [${err.code}] ${err.message}\n`);
    });
  }, cfg.intervalMs);
  const stats = serveProcessStats(transport, "base-builder", () => ({
    id: `base-builder-${cfg.holder}`,
    counters: counters.snapshot(),
    figures: buildFigures(builder),
  }));
  // Listed by `custody ps` (a NATS service) before the process says it is ready.
  await stats.registered;
  return {
    builder,
    counters,
    lost,
    async stop() {
      stats.unsubscribe();
      clearInterval(timer);
      await busy;
      await transport.close();
      lock.release();
    },
  };
}

/** What `custody ps` shows of a builder: its base, and of a running build how long it runs and in which phase. */
function buildFigures(builder: BaseBuilder): Record<string, number> {
  const p = builder.progress();
  const figures: Record<string, number> = {
    baseThroughSeq: builder.base?.throughSeq ?? 0,
    baseBytes: builder.base?.bytes ?? 0,
    buildMs: p.buildMs,
  };
  if (p.phase !== "idle") figures[`build_${p.phase}Ms`] = p.phaseMs;
  return figures;
}

import { systemClock } from "../../core/index.ts";
import { ControlLogFollower, ControlLogPeers } from "../../custody/index.ts";
import { openJetStreamControlLog } from "../../transport/index.ts";
import type { connectRole } from "./connect.ts";
import { loadControlTrust } from "./control-trust-files.ts";
import type { HolderRoleConfig } from "./role-config.ts";

/** Follows the region's control log for peers' admitted keys, re-read every second. */
export async function followPeers(
  transport: Awaited<ReturnType<typeof connectRole>>["transport"],
  cfg: Pick<HolderRoleConfig, "controlRegion" | "controlTrust">,
) {
  const store = await openJetStreamControlLog(transport.connection, { region: cfg.controlRegion });
  const peers = new ControlLogPeers(
    new ControlLogFollower(store, undefined, loadControlTrust(cfg.controlTrust).trust),
    systemClock,
    1_000,
  );
  await peers.refresh();
  const timer = setInterval(() => void peers.refresh().catch(() => undefined), 1_000);
  return { store, peers, timer };
}

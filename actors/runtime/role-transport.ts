import { trace } from "@opentelemetry/api";
import type { connectRole } from "./connect.ts";
import { shapedByLinks } from "./role-links.ts";
import type { HolderRoleConfig } from "./role-config.ts";
import { withRouteProbing } from "./route-probe-config.ts";
import { startRoleTracing } from "./role-tracing.ts";

/**
 * A role's tracing, and the transport it sends units through: shaped by the config's links when it
 * has them, with route probing (the control log and stats use the bus directly).
 */
export function startRoleTransport(
  cfg: Pick<HolderRoleConfig, "spanFile" | "links" | "probe">,
  role: "holder" | "writer",
  id: string,
  transport: Awaited<ReturnType<typeof connectRole>>["transport"],
) {
  const tracing = startRoleTracing(cfg.spanFile, role, id, cfg.links ? { "custody.site": cfg.links.site } : {});
  const probing = withRouteProbing(
    shapedByLinks(transport, cfg.links, trace.getTracer("custody.link")),
    cfg.probe,
    cfg.links,
    id,
  );
  return { tracing, probing, sending: probing.transport };
}

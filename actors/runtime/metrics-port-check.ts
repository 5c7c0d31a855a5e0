import { createServer } from "node:net";
import { CustodyError } from "../../core/index.ts";

/** Thrown when a role's metrics port is taken before it starts: nothing was started or claimed. */
export class MetricsPortInUseError extends CustodyError {
  constructor(host: string, port: number) {
    super(
      "metrics_port_in_use",
      `metrics port ${host}:${port} is in use (is another process of this role already running here?)`,
      { host, port },
    );
  }
}

/**
 * Checks that the metrics port is free before a role starts (issue #46). A role binds it only
 * after it serves, and a holder that serves has already asked to be admitted as a new
 * incarnation — which fences the running one. A second copy on the same machine must fail
 * before that, with a line that says why, not with a bare `listen EADDRINUSE` afterwards.
 * (Another process may still take the port in between; the bind then fails as before.)
 */
export async function checkMetricsPortFree(opts: {
  port?: number | undefined;
  host?: string | undefined;
}): Promise<void> {
  if (opts.port === undefined || opts.port === 0) return;
  const host = opts.host ?? "127.0.0.1";
  const port = opts.port;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (err: NodeJS.ErrnoException) =>
      reject(err.code === "EADDRINUSE" ? new MetricsPortInUseError(host, port) : err),
    );
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

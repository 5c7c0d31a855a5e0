import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { LOOPBACK } from "../../transport/index.ts";
import { DeployedProcess } from "./deployed-process.ts";
import { freePort } from "./free-port.ts";

/**
 * The Prometheus server to run: `PROMETHEUS_BIN` or `prometheus` on PATH (Debian's package;
 * tools/scripts/ensure-prometheus.sh).
 */
export function prometheusBin(): string {
  return process.env["PROMETHEUS_BIN"] ?? "prometheus";
}

/** Its rule checker: `PROMTOOL_BIN` or `promtool` on PATH. */
export function promtoolBin(): string {
  return process.env["PROMTOOL_BIN"] ?? "promtool";
}

/** One alert as Prometheus's `/api/v1/alerts` lists it (pending or firing). */
export interface PrometheusAlert {
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly state: "pending" | "firing";
  readonly activeAt: string;
  readonly value: string;
}

/** One scrape target as `/api/v1/targets` lists it. */
export interface PrometheusTarget {
  readonly labels: Readonly<Record<string, string>>;
  readonly scrapeUrl: string;
  readonly health: "up" | "down" | "unknown";
  readonly lastError: string;
}

/** One series of an instant query's vector result. */
export interface PrometheusSample {
  readonly metric: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A Prometheus server of a test, on a loopback port, with its storage in the test's folder. */
export interface PrometheusHandle {
  readonly url: string;
  readonly process: DeployedProcess;
  /** The alerts active now (pending or firing). */
  alerts(): Promise<PrometheusAlert[]>;
  /** An instant query now (`/api/v1/query`); a vector result. */
  query(expr: string): Promise<PrometheusSample[]>;
  /** The active scrape targets and how their last scrape went. */
  targets(): Promise<PrometheusTarget[]>;
  /** SIGTERM, then SIGKILL if it has not ended within `ms`. */
  stop(ms?: number): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function api<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  const body = (await res.json()) as { status: string; data: T; error?: string };
  if (body.status !== "success") throw new Error(`prometheus ${url}: ${body.error ?? res.status}`);
  return body.data;
}

/**
 * Starts `prometheus` with `config` (an object; written as JSON, which Prometheus reads as YAML)
 * as `<dir>/prometheus.yml`, its TSDB in `<dir>/tsdb`, listening on a free loopback port; resolves
 * once `/-/ready` answers. A port taken meanwhile by another process ("address already in use")
 * starts it again on another (3 attempts). Nothing else is signalled; the caller stops it.
 */
export async function startPrometheus(
  dir: string,
  config: Record<string, unknown>,
  readyMs: number,
): Promise<PrometheusHandle> {
  const configFile = join(dir, "prometheus.yml");
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const url = `http://${LOOPBACK}:${port}`;
    const p = new DeployedProcess("prometheus", prometheusBin(), [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, "tsdb")}`,
      `--web.listen-address=${LOOPBACK}:${port}`,
    ]);
    const end = Date.now() + readyMs;
    let ready = false;
    while (!ready && p.running && Date.now() < end) {
      ready = await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(1_000) }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (!ready) await sleep(100);
    }
    if (ready) {
      return {
        url,
        process: p,
        alerts: async () => (await api<{ alerts: PrometheusAlert[] }>(`${url}/api/v1/alerts`)).alerts,
        query: async (expr) =>
          (
            await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
              `${url}/api/v1/query?query=${encodeURIComponent(expr)}`,
            )
          ).result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) })),
        targets: async () =>
          (await api<{ activeTargets: PrometheusTarget[] }>(`${url}/api/v1/targets?state=active`)).activeTargets,
        stop: async (ms = 20_000) => void (await p.signal("SIGTERM", ms)),
      };
    }
    await p.signal("SIGKILL", 10_000);
    if (attempt >= 3 || !/address already in use/i.test(p.log))
      throw new Error(`prometheus did not become ready within ${readyMs} ms\n${p.log}`);
  }
}

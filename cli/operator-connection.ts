import type { Command } from "commander";
import { readOperatorConfig, RoleConfigError, type NatsRoleConfig } from "../actors/runtime/index.ts";
import { readNkeySeed } from "../transport/security/index.ts";
import {
  connectNats,
  NatsConnectError,
  NatsConnectErrorCode,
  NatsTransport,
  type ConnectNatsOptions,
  type NatsConnection,
} from "../transport/index.ts";
import { CustodyCliError } from "./cli-error.ts";

/**
 * How an operator command reaches the bus: a server URL and, on a secured deployment, the
 * operator's nkey seed, inbox prefix and the CA to trust — given one by one or all at once by the
 * `operator/nats.json` that `custody init` writes (`--operator-config`). One option set for every
 * command that connects, so they all log in the same way. A command never waits for a server: one
 * connect attempt per server, bounded by `--connect-timeout`, and no reconnects.
 */

/** The connection options every connecting command takes. */
export interface OperatorConnectionOptions {
  server?: string;
  operatorConfig?: string;
  nkeySeed?: string;
  inboxPrefix?: string;
  ca?: string;
  connectTimeout?: string;
}

/** Used when neither `--server` nor `--operator-config` names a server. */
export const DEFAULT_SERVER = "nats://127.0.0.1:4222";

/** `--connect-timeout` when not given (ms). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;

/**
 * Adds `--server`, `--operator-config`, `--nkey-seed`, `--inbox-prefix`, `--ca` and
 * `--connect-timeout` to a command.
 */
export function withOperatorConnection(c: Command): Command {
  return c
    .option("--server <url>", `NATS server URL (default: the operator config's, else ${DEFAULT_SERVER})`)
    .option(
      "--operator-config <file>",
      "the operator's connection (servers, nkey seed, inbox prefix, CA): custody init writes operator/nats.json",
    )
    .option("--nkey-seed <file>", "the operator's nkey seed file (mode 0600), on a secured bus")
    .option("--inbox-prefix <prefix>", "the operator's inbox prefix (_INBOX.operator.<id>), on a secured bus")
    .option("--ca <file>", "CA certificate (PEM) to trust for the server's TLS certificate")
    .option(
      "--connect-timeout <ms>",
      "per server: how long a connection (and a control-log read) may take before the command fails or tries " +
        "the next region's server",
      String(DEFAULT_CONNECT_TIMEOUT_MS),
    );
}

/** `--connect-timeout` as a number of ms; throws CustodyCliError naming the option. */
export function connectTimeoutMs(o: OperatorConnectionOptions): number {
  if (o.connectTimeout === undefined) return DEFAULT_CONNECT_TIMEOUT_MS;
  const n = Number(o.connectTimeout);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new CustodyCliError(`--connect-timeout must be a positive integer, got ${o.connectTimeout}`, {
      option: "connect-timeout",
    });
  return n;
}

/**
 * Reads the operator connection file `--operator-config` names (actors' runtime reads it, as it
 * reads role configs); one it cannot read or that is invalid is a bad argument naming the option.
 */
export function readOperatorConfigOption(file: string): NatsRoleConfig {
  try {
    return readOperatorConfig(file);
  } catch (err) {
    if (!(err instanceof RoleConfigError)) throw err;
    throw new CustodyCliError(`--operator-config ${err.message}`, { option: "operator-config" });
  }
}

/**
 * The client options of an operator command named `name`: explicit options win over the operator
 * config's; one connect attempt bounded by `--connect-timeout`, no reconnects. Throws SecurityError
 * `bad_credentials` for a seed file that is unreadable or not 0600.
 */
export function operatorConnectOptions(o: OperatorConnectionOptions, name: string): ConnectNatsOptions {
  const cfg = o.operatorConfig !== undefined ? readOperatorConfigOption(o.operatorConfig) : undefined;
  const seedFile = o.nkeySeed ?? cfg?.credentials?.nkeySeedFile;
  const inboxPrefix = o.inboxPrefix ?? cfg?.credentials?.inboxPrefix;
  const caFile = o.ca ?? cfg?.tls?.caFile;
  return {
    servers: o.server ?? cfg?.servers ?? DEFAULT_SERVER,
    name,
    maxReconnectAttempts: 0,
    timeout: connectTimeoutMs(o),
    ...(seedFile !== undefined ? { nkeySeed: readNkeySeed(seedFile).seed } : {}),
    ...(inboxPrefix !== undefined ? { inboxPrefix } : {}),
    ...(caFile !== undefined ? { caFile } : {}),
  };
}

/**
 * A failed connect said with what to pass: a server whose certificate is not trusted, or that
 * wants credentials, while the command was given no CA or no seed, needs the operator config
 * `custody init` wrote (it names both), or the one option.
 */
function withOptionHint(err: unknown, o: OperatorConnectionOptions): unknown {
  if (!(err instanceof NatsConnectError) || o.operatorConfig !== undefined) return err;
  const servers = (err.detail["servers"] as string[] | undefined) ?? [];
  const hint =
    err.code === NatsConnectErrorCode.TlsUntrusted && o.ca === undefined
      ? "pass --operator-config <deployment>/operator/nats.json (custody init wrote it; it names the CA), or " +
        "--ca <the deployment's CA certificate>"
      : err.code === NatsConnectErrorCode.AuthFailed && o.nkeySeed === undefined
        ? "pass --operator-config <deployment>/operator/nats.json (custody init wrote it), or --nkey-seed and " +
          "--inbox-prefix"
        : undefined;
  return hint === undefined
    ? err
    : new NatsConnectError(err.code, servers, `${err.reason}: ${hint}`, { cause: err.cause });
}

/** The operator's NATS connection (see `operatorConnectOptions`); a failure names the server and what to pass. */
export async function connectOperator(o: OperatorConnectionOptions, name: string): Promise<NatsConnection> {
  return connectNats(operatorConnectOptions(o, name)).catch((err: unknown) => {
    throw withOptionHint(err, o);
  });
}

/** `connectOperator` as a Transport. */
export async function connectOperatorTransport(o: OperatorConnectionOptions, name: string): Promise<NatsTransport> {
  return NatsTransport.connect(operatorConnectOptions(o, name)).catch((err: unknown) => {
    throw withOptionHint(err, o);
  });
}

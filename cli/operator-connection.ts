import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { natsRoleSchema, type NatsRoleConfig } from "../runtime/index.ts";
import { readNkeySeed } from "../security/index.ts";
import type { ConnectNatsOptions } from "../transport/index.ts";
import { CustodyCliError } from "./commands/custody.ts";

/**
 * How an operator command reaches the bus: a server URL and, on a secured deployment, the
 * operator's nkey seed, inbox prefix and the CA to trust — given one by one or all at once by the
 * `operator/nats.json` that `custody init` writes (`--operator-config`). One option set for every
 * command that connects, so they all log in the same way.
 */

/** The connection options every connecting command takes. */
export interface OperatorConnectionOptions {
  server?: string;
  operatorConfig?: string;
  nkeySeed?: string;
  inboxPrefix?: string;
  ca?: string;
}

/** Used when neither `--server` nor `--operator-config` names a server. */
export const DEFAULT_SERVER = "nats://127.0.0.1:4222";

/** Adds `--server`, `--operator-config`, `--nkey-seed`, `--inbox-prefix` and `--ca` to a command. */
export function withOperatorConnection(c: Command): Command {
  return c
    .option("--server <url>", `NATS server URL (default: the operator config's, else ${DEFAULT_SERVER})`)
    .option("--operator-config <file>", "the operator's connection (servers, nkey seed, inbox prefix, CA): custody init writes operator/nats.json")
    .option("--nkey-seed <file>", "the operator's nkey seed file (mode 0600), on a secured bus")
    .option("--inbox-prefix <prefix>", "the operator's inbox prefix (_INBOX.operator.<id>), on a secured bus")
    .option("--ca <file>", "CA certificate (PEM) to trust for the server's TLS certificate");
}

/** Reads an operator connection file (the `nats` section of a role config); throws CustodyCliError naming the file. */
export function readOperatorConfig(file: string): NatsRoleConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    throw new CustodyCliError(`--operator-config ${file}: ${(err as Error).message}`, { option: "operator-config" });
  }
  const r = natsRoleSchema.safeParse(raw);
  if (!r.success) throw new CustodyCliError(`--operator-config ${file}: ${r.error.issues[0]!.path.join(".") || "(root)"}: ${r.error.issues[0]!.message}`, { option: "operator-config" });
  return r.data;
}

/**
 * The client options of an operator command named `name` (reconnect policy left to the caller):
 * explicit options win over the operator config's. Throws SecurityError `bad_credentials` for a seed file that is unreadable or not 0600.
 */
export function operatorConnectOptions(o: OperatorConnectionOptions, name: string): ConnectNatsOptions {
  const cfg = o.operatorConfig !== undefined ? readOperatorConfig(o.operatorConfig) : undefined;
  const seedFile = o.nkeySeed ?? cfg?.credentials?.nkeySeedFile;
  const inboxPrefix = o.inboxPrefix ?? cfg?.credentials?.inboxPrefix;
  const caFile = o.ca ?? cfg?.tls?.caFile;
  return {
    servers: o.server ?? cfg?.servers ?? DEFAULT_SERVER,
    name,
    ...(seedFile !== undefined ? { nkeySeed: readNkeySeed(seedFile).seed } : {}),
    ...(inboxPrefix !== undefined ? { inboxPrefix } : {}),
    ...(caFile !== undefined ? { caFile } : {}),
  };
}

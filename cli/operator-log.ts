import { ControlLogFollower } from "../custody/index.ts";
import { closeNats, openJetStreamControlLog } from "../transport/index.ts";
import { operatorAccess, type OperatorKeyOptions } from "./operator-signing.ts";
import { connectOperator, type OperatorConnectionOptions } from "./operator-connection.ts";

/** What an operator command that reads or commits to a region's control log is given. */
export interface OperatorLogOptions extends OperatorKeyOptions, OperatorConnectionOptions {
  region: string;
}

/**
 * Runs `fn` on the region's control log as the operator: one connection (no reconnects: a command
 * fails rather than waits), the store and a follower that trusts what the operator's key says.
 * The connection is closed whatever `fn` does.
 */
export async function withOperatorLog<T>(
  o: OperatorLogOptions,
  name: string,
  fn: (log: { store: Awaited<ReturnType<typeof openJetStreamControlLog>>; follower: ControlLogFollower }) => Promise<T>,
): Promise<T> {
  const nc = await connectOperator(o, name);
  try {
    const store = await openJetStreamControlLog(nc, { region: o.region });
    return await fn({ store, follower: new ControlLogFollower(store, undefined, operatorAccess(o).trust) });
  } finally {
    await closeNats(nc);
  }
}

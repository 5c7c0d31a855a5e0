import anyTest, { type TestFn } from "ava";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { custodyCli as cli } from "../kit/custody-cli.ts";
import { commitControlEvent } from "../../custody/control-commit.ts";
import { ControlLogFollower } from "../../custody/control-log-follower.ts";
import { closeNats, connectNats } from "../../transport/nats-connection.ts";
import { initJetStreamControlLog } from "../../transport/jetstream-control-log.ts";
import { withNatsServer, type NatsTestContext } from "../kit/nats-test-context.ts";
import { admit, createOb, release, who } from "./control-fixtures.ts";

const test = anyTest as TestFn<NatsTestContext>;
withNatsServer(test);

test.serial("custody control show prints the folded log as one JSON line, and verify refuses a head the log never had", async (t) => {
  const nc = await connectNats({ servers: t.context.nats.url, name: "cli-seed", maxReconnectAttempts: 0 });
  t.context.defer(() => closeNats(nc));
  const { log: store } = await initJetStreamControlLog(nc, { region: "cli" });
  const f = new ControlLogFollower(store);
  for (const b of [admit("h1"), admit("h2"), createOb("ob1", ["h1", "h2"]), release("h1", 1, 9, ["h2"])]) await commitControlEvent(store, f, who("ctl-a"), () => b);

  const shown = await cli(["control", "show", "--server", t.context.nats.url, "--region", "cli", "--json"]);
  const doc = JSON.parse(shown.stdout.trim().split("\n").at(-1)!);
  t.is(doc.lastSeq, 4);
  t.is(doc.headHash, f.state.headHash);
  t.deepEqual(doc.releaseFrontiers, [{ obligationId: "ob1", holderId: "h1", released: [[1, 9]] }]);

  await cli(["control", "verify", "--server", t.context.nats.url, "--region", "cli", "--head-seq", "4", "--head-hash", f.state.headHash]);
  const err = await t.throwsAsync(cli(["control", "verify", "--server", t.context.nats.url, "--region", "cli", "--head-seq", "9", "--head-hash", f.state.headHash]));
  t.regex((err as { stderr?: string }).stderr ?? "", /error \[log_regression\]/);
});

test.serial("custody receipts keygen writes a private key file readable only by its owner and prints the public key", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-keygen-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, "holder.key");
  const { stdout } = await cli(["receipts", "keygen", "--out", out, "--json"]);
  const doc = JSON.parse(stdout.trim());
  t.regex(doc.publicKey, /^[0-9a-f]{64}$/);
  t.is(statSync(out).mode & 0o777, 0o600);
});

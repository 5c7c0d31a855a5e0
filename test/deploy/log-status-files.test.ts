/**
 * Where `custody status` / `custody recover` look when no controller answers: the servers to try
 * (in order, each once) and the volume's controller config, found through the deployment's
 * `roles.json` beside the operator config. No server needed.
 */
import test from "ava";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { serverUrls, volumeDeployment } from "../../cli/log-status.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";

/** A deployment folder as `custody init` lays it out: operator/nats.json and roles.json. */
function deploymentFolder(): { out: string; operatorConfig: string } {
  const out = tempDir("custody-log-status-");
  mkdirSync(join(out, "operator"));
  const operatorConfig = join(out, "operator", "nats.json");
  writeFileSync(operatorConfig, JSON.stringify({ servers: "nats://127.0.0.1:4001" }));
  writeFileSync(
    join(out, "roles.json"),
    JSON.stringify({
      roles: [{ instance: "controller-c1", role: "controller", region: "east", config: join(out, "missing-controller.json") }],
      natsServers: [
        { region: "east", url: "nats://127.0.0.1:4001" },
        { region: "west", url: "nats://127.0.0.1:4002" },
      ],
    }),
  );
  return { out, operatorConfig };
}

test("the servers to try: --server (comma-separated) or the operator config's first, then every region's from roles.json, each once", (t) => {
  const { operatorConfig } = deploymentFolder();
  t.deepEqual(serverUrls({ operatorConfig }), ["nats://127.0.0.1:4001", "nats://127.0.0.1:4002"]);
  t.deepEqual(serverUrls({ operatorConfig, server: "nats://127.0.0.1:9,nats://127.0.0.1:4002" }), ["nats://127.0.0.1:9", "nats://127.0.0.1:4002", "nats://127.0.0.1:4001"]);
  t.deepEqual(serverUrls({}), ["nats://127.0.0.1:4222"], "nothing given: the default server");
});

test("no controller config of the volume is a no_topology error naming where it looked", (t) => {
  const err = t.throws(() => volumeDeployment({ server: "nats://127.0.0.1:9" }, "vol-1"));
  t.is((err as { code?: string }).code, "no_topology");
  t.regex(err!.message, /no --operator-config/);
  const { operatorConfig } = deploymentFolder();
  const missing = t.throws(() => volumeDeployment({ operatorConfig }, "vol-1"));
  t.regex(missing!.message, /missing-controller\.json/, "an unreadable controller config is named");
});

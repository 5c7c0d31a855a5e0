/**
 * The CLI's error contract (issue #47, docs in README "Errors and exit codes"): a failure is one
 * `error [code]: …` line with a lower-case code, naming the URL, file, key or option at fault —
 * a refused connection names its URL, an untrusted certificate says what to pass, and a misspelled
 * key is reported as the unknown key it is, even when the key it misspells is required.
 */
import test from "ava";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { runCliCaptured } from "../../cli/program.ts";
import { parseHolderConfig } from "../../actors/holder/holder-config.ts";
import { parseDeployment as parseDemoDeployment } from "../../tools/demo/deployment.ts";
import { holderRoleSchema, readRoleConfig } from "../../actors/runtime/role-config.ts";
import { makeCertificates, renderTlsBlock } from "../../transport/security/index.ts";
import { freePort, loopbackDeployment, repoRoot, startNatsServer } from "../kit/index.ts";
import { tempDir } from "../e2e/e2e-fixture.ts";

const ERROR_LINE = /^error \[[a-z][a-z0-9_]*\]: .+\n$/;

test("a refused connection names its URL, in every command that connects", async (t) => {
  const url = `nats://127.0.0.1:${await freePort()}`;
  const dir = tempDir("custody-cli-errors-");
  const bootstrap = join(dir, "bootstrap.json");
  writeFileSync(bootstrap, JSON.stringify({ controlRegion: "ctl", holders: [], obligations: [] }));
  const commands = [
    ["ps"],
    ["status", "vol-a", "--log-wait", "1"],
    ["log", "init", "--region", "ctl"],
    ["control", "show", "--region", "ctl"],
    ["hold", "list", "--region", "ctl"],
    ["failover", "--volume", "vol-a", "--term", "2", "--cut", "l0=5"],
    ["bootstrap", bootstrap],
  ];
  for (const args of commands) {
    const r = await runCliCaptured([...args, "--server", url]);
    t.is(r.code, 1, args.join(" "));
    t.regex(r.stderr, ERROR_LINE, args.join(" "));
    t.true(r.stderr.includes(url) && r.stderr.includes("connection refused"), `${args.join(" ")}: ${r.stderr}`);
  }
});

test("a server whose certificate is not trusted: the error says to pass --operator-config or --ca, and --ca is enough", async (t) => {
  const dir = tempDir("custody-cli-tls-");
  const certs = await makeCertificates(join(dir, "tls"), [{ name: "nats", hosts: ["127.0.0.1", "localhost"] }]);
  const server = await startNatsServer({ jetstream: false, security: renderTlsBlock({ ...certs.servers["nats"]!, caFile: certs.caFile }, { verify: false }) });
  t.teardown(() => server.stop());
  const untrusted = await runCliCaptured(["ps", "--server", server.url, "--wait", "100"]);
  t.is(untrusted.code, 1);
  t.regex(untrusted.stderr, ERROR_LINE);
  t.regex(untrusted.stderr, /^error \[tls_untrusted\]: cannot connect to nats:\/\/127\.0\.0\.1:\d+: the server's TLS certificate is not trusted \(unable to verify the first certificate; no CA to trust was given\): pass --operator-config .*, or --ca /);
  const trusted = await runCliCaptured(["ps", "--server", server.url, "--wait", "100", "--ca", certs.caFile]);
  t.is(trusted.code, 0, trusted.stderr);
});

test("a misspelled required key is reported as the unknown key it is, with the file and path", async (t) => {
  const dir = tempDir("custody-cli-typo-");
  const d = (await loopbackDeployment(dir)) as { holders: Record<string, unknown>[] };
  d.holders[1]!["residencey"] = d.holders[1]!["residency"];
  delete d.holders[1]!["residency"];
  const file = join(dir, "deployment.json");
  writeFileSync(file, JSON.stringify(d));
  const init = await runCliCaptured(["init", file, "--out", join(dir, "out")]);
  t.is(init.code, 1);
  t.is(init.stderr, `error [invalid_deployment]: ${file}: invalid deployment: unknown key holders.1.residencey (did you mean residency?)\n`);

  // The operator's connection file (custody init writes it): `servers` is required.
  const operator = join(dir, "nats.json");
  writeFileSync(operator, JSON.stringify({ severs: "nats://127.0.0.1:4222" }));
  const ps = await runCliCaptured(["ps", "--operator-config", operator]);
  t.is(ps.stderr, `error [bad_argument]: --operator-config ${operator}: unknown key severs (did you mean servers?)\n`);

  // A role config (what `custody run` reads): `controlRegion` is required.
  const role = join(dir, "holder.json");
  writeFileSync(role, JSON.stringify({ role: "holder", nats: { servers: "nats://127.0.0.1:4222" }, controlRegon: "ctl", stateDir: dir, keyFile: join(dir, "k"), holder: {} }));
  t.throws(() => readRoleConfig(role, holderRoleSchema), { code: "invalid_role_config", message: `invalid config ${role}: unknown key controlRegon (did you mean controlRegion?)` });

  // Its holder section (validated by the holder; a deployment's holder overrides end up there).
  const holder = { holderId: "h1", incarnation: 1, site: { region: "r", az: "a", host: "h" }, residency: ["ram"], lanes: [{ volume: "v", lane: "l0", upstream: ["w1"] }], arena: { limitByte: 1 << 20 }, receipts: {} };
  t.throws(() => parseHolderConfig(holder as never), { code: "invalid_holder_config", message: "invalid holder config: unknown key arena.limitByte (did you mean limitBytes?)" });

  // The demo's deployment file: nested objects are strict too.
  const demo = JSON.parse(readFileSync(join(repoRoot(), "examples", "deployment.json"), "utf8")) as { holders: Record<string, unknown>[] };
  demo.holders[0]!["upstreem"] = demo.holders[0]!["upstream"];
  delete demo.holders[0]!["upstream"];
  t.throws(() => parseDemoDeployment(demo), { code: "invalid_deployment", message: "deployment: unknown key holders.0.upstreem (did you mean upstream?)" });
});

/** Every `.ts` file of the product (not tests, dependencies or build output). */
function productFiles(dir: string, root = dir): string[] {
  const skip = new Set(["node_modules", "dist", "test", ".git", "runs", "docs"]);
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.isDirectory()) return skip.has(e.name) || e.name.startsWith(".") ? [] : productFiles(join(dir, e.name), root);
    return e.name.endsWith(".ts") ? [relative(root, join(dir, e.name))] : [];
  });
}

test("every error code is lower case: the values of the *Code tables and the codes CustodyError subclasses pass to super", (t) => {
  const root = repoRoot();
  const bad: string[] = [];
  let codes = 0;
  for (const file of productFiles(root)) {
    const src = readFileSync(join(root, file), "utf8");
    for (const table of src.matchAll(/export const \w+Code = \{([^}]*)\}/g)) {
      for (const m of table[1]!.matchAll(/:\s*"([^"]*)"/g)) {
        codes++;
        if (!/^[a-z][a-z0-9_]*$/.test(m[1]!)) bad.push(`${file}: ${m[1]}`);
      }
    }
    for (const cls of src.matchAll(/class \w+ extends CustodyError\b[\s\S]*?super\(\s*"([^"]*)"/g)) {
      codes++;
      if (!/^[a-z][a-z0-9_]*$/.test(cls[1]!)) bad.push(`${file}: ${cls[1]}`);
    }
  }
  t.true(codes > 50, `found ${codes} codes`);
  t.deepEqual(bad, []);
});

import test from "ava";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  inboxPrefixFor,
  makeCertificates,
  mayPublish,
  mayReceive,
  patternCovers,
  permissionsFor,
  readNkeySeed,
  renderServerAuth,
  renderTlsBlock,
  SecurityError,
  writeNkeySeed,
  type SubjectPermissions,
} from "../../transport/security/index.ts";
import { controlStreamName } from "../../transport/jetstream-control-log.ts";
import { creditSubject, ctrlSubject, fetchSubject, receiptSubject, releaseSubject, replicaCatchupSubject, statusSubject, unitSubject } from "../../transport/protocol/subjects.ts";

const REGION = "r1";
const writer = permissionsFor("writer", "w1", { controlRegion: REGION, volume: "v1", lanes: [{ lane: "l0", firstHops: ["h1", "h2"] }] });
const h1 = permissionsFor("holder", "h1", { controlRegion: REGION, lanes: [{ volume: "v1", lane: "l0", downstream: ["h3"] }] });
const h2 = permissionsFor("holder", "h2", { controlRegion: REGION, lanes: [{ volume: "v1", lane: "l0", downstream: [] }] });
const controller = permissionsFor("controller", "c1", { controlRegion: REGION, volumes: ["v1"], releaseTo: ["h1", "h2", "h3"] });
const repair = permissionsFor("repair", "r1", { controlRegion: REGION, volumes: ["v1"] });
const operator = permissionsFor("operator", "op", {});
const ALL: Record<string, SubjectPermissions> = { writer, h1, h2, controller, repair, operator };
const STREAM = controlStreamName(REGION);

test("pattern matching follows nats-server: * is one token, a final > one or more", (t) => {
  t.true(patternCovers("a.*.c", "a.b.c"));
  t.false(patternCovers("a.*.c", "a.b.d.c"));
  t.true(patternCovers("a.>", "a.b.c"));
  t.false(patternCovers("a.>", "a"));
  t.false(patternCovers("a.b", "a.b.c"));
});

test("only the controller may publish release frontiers, and only to the holders of its volumes", (t) => {
  for (const [name, p] of Object.entries(ALL)) t.is(mayPublish(p, releaseSubject("h1")), name === "controller", name);
  t.false(mayPublish(controller, releaseSubject("h9")), "not to a holder of another volume");
});

test("a fetch names its volume: the controller and repair fetch their volumes only, a base builder its holder's volume, the operator any", (t) => {
  t.true(mayPublish(controller, fetchSubject("h1", "v1")));
  t.false(mayPublish(controller, fetchSubject("h1", "v2")));
  t.true(mayPublish(repair, fetchSubject("h2", "v1")));
  t.false(mayPublish(repair, fetchSubject("h2", "v2")));
  t.true(mayPublish(operator, fetchSubject("h2", "v2")));
  const bb = permissionsFor("base-builder", "bb1", { holder: "h1", volume: "v1" });
  t.true(mayPublish(bb, fetchSubject("h1", "v1")));
  t.false(mayPublish(bb, fetchSubject("h1", "v2")));
  t.false(mayPublish(bb, fetchSubject("h2", "v1")));
  for (const name of ["writer", "h1", "h2"]) t.false(mayPublish(ALL[name]!, fetchSubject("h1", "v1")), name);
  t.true(mayReceive(h1, fetchSubject("h1", "v2")), "a holder takes every fetch to it and checks the volume itself");
  t.false(mayReceive(h1, fetchSubject("h2", "v1")));
});

test("only the controller may append to the control stream, and only the operator may create, delete or purge streams", (t) => {
  for (const [name, p] of Object.entries(ALL)) {
    t.is(mayPublish(p, ctrlSubject(REGION)), name === "controller", `${name} append`);
    for (const op of ["CREATE", "DELETE", "PURGE", "UPDATE", "MSG.DELETE"]) t.is(mayPublish(p, `$JS.API.STREAM.${op}.${STREAM}`), name === "operator", `${name} ${op}`);
  }
  // Every reader of the log may read it (stream info, entries by sequence, the subject's announcements), and create no consumer.
  for (const name of ["writer", "h1", "controller", "repair"]) {
    t.true(mayPublish(ALL[name]!, `$JS.API.STREAM.INFO.${STREAM}`), name);
    t.true(mayPublish(ALL[name]!, `$JS.API.STREAM.MSG.GET.${STREAM}`), name);
    t.true(mayReceive(ALL[name]!, ctrlSubject(REGION)), name);
    for (const api of [`CONSUMER.CREATE.${STREAM}`, `CONSUMER.CREATE.${STREAM}.abc`, `CONSUMER.CREATE.${STREAM}.abc.${ctrlSubject(REGION)}`, `CONSUMER.DURABLE.CREATE.${STREAM}.abc`, `CONSUMER.DELETE.${STREAM}.abc`, `CONSUMER.MSG.NEXT.${STREAM}.abc`]) {
      t.false(mayPublish(ALL[name]!, `$JS.API.${api}`), `${name} ${api}`);
    }
    t.false(mayPublish(ALL[name]!, `$JS.API.STREAM.INFO.OTHER`), `${name} reads only its region's stream`);
  }
});

test("a holder publishes credits only under its own id and receipts only for lanes it serves", (t) => {
  t.true(mayPublish(h1, creditSubject("h1", "v1", "l0")));
  t.false(mayPublish(h1, creditSubject("h2", "v1", "l0")));
  t.true(mayPublish(h1, receiptSubject("v1", "l0")));
  t.false(mayPublish(h1, receiptSubject("v1", "l1")));
  t.false(mayPublish(h1, receiptSubject("v2", "l0")));
  t.false(mayReceive(h1, unitSubject("h2", "v1", "l0")), "nor listens to another holder's units");
});

test("units of a volume come only from its writer into first hops, or from a holder into its downstream edges", (t) => {
  t.true(mayPublish(writer, unitSubject("h1", "v1", "l0")));
  t.false(mayPublish(writer, unitSubject("h3", "v1", "l0")), "h3 is not a first hop");
  t.false(mayPublish(writer, unitSubject("h1", "v2", "l0")), "another volume");
  t.true(mayPublish(h1, unitSubject("h3", "v1", "l0")));
  t.false(mayPublish(h1, unitSubject("h2", "v1", "l0")), "h2 is not h1's edge");
  t.false(mayPublish(h2, unitSubject("h1", "v1", "l0")));
  for (const p of [controller, repair, operator]) t.false(mayPublish(p, unitSubject("h1", "v1", "l0")));
});

test("nobody may publish into an inbox; each principal listens only under its own inbox prefix", (t) => {
  for (const [name, p] of Object.entries(ALL)) {
    t.false(p.publish.some((s) => s.startsWith("_INBOX")), `${name} answers via allow_responses only`);
    t.true(p.allowResponses);
    const inboxes = p.subscribe.filter((s) => s.startsWith("_INBOX"));
    t.deepEqual(inboxes, [`${p.inboxPrefix}.>`], name);
  }
  t.is(inboxPrefixFor("holder", "h1"), "_INBOX.holder.h1");
  t.false(mayReceive(h1, `${controller.inboxPrefix}.x`));
});

test("a principal id that cannot be a subject token is refused", (t) => {
  t.throws(() => permissionsFor("holder", "h.1", { controlRegion: REGION, lanes: [] }), { code: "invalid_subject" });
  t.throws(() => permissionsFor("nobody" as "holder", "x", { controlRegion: REGION, lanes: [] }), { instanceOf: SecurityError, code: "invalid_principal" });
});

test("the rendered authorization and tls blocks are a configuration nats-server accepts", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-sec-render-"));
  const certs = await makeCertificates(join(dir, "tls"), [{ name: "s1", hosts: ["127.0.0.1", "localhost"] }]);
  const users = Object.entries(ALL).map(([name, permissions]) => ({ nkey: writeNkeySeed(join(dir, `${name}.nk`)).publicKey, permissions, label: name }));
  const conf = join(dir, "nats.conf");
  writeFileSync(conf, [`listen: "127.0.0.1:-1"`, renderServerAuth(users), renderTlsBlock({ ...certs.servers["s1"]!, caFile: certs.caFile }, { verify: false })].join("\n"));
  t.notThrows(() => execFileSync(process.env["NATS_SERVER_BIN"] ?? "nats-server", ["-c", conf, "-t"], { stdio: "pipe" }));
  t.true(readFileSync(conf, "utf8").includes(`"$JS.API.STREAM.INFO.${STREAM}"`));
  t.throws(() => renderServerAuth([{ nkey: "not-a-key", permissions: h1 }]), { code: "invalid_principal" });
  t.throws(() => renderServerAuth([users[0]!, users[0]!]), { code: "invalid_principal" }, "an nkey listed twice");
});

test("seed files are created with mode 0600, never overwritten, and refused when others can read them", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-sec-seed-"));
  const file = join(dir, "h1.nk");
  const creds = writeNkeySeed(file);
  t.is(statSync(file).mode & 0o777, 0o600);
  t.regex(creds.publicKey, /^U[A-Z2-7]{55}$/);
  t.is(readNkeySeed(file).publicKey, creds.publicKey);
  t.throws(() => writeNkeySeed(file), { code: "bad_credentials" });
  chmodSync(file, 0o644);
  t.throws(() => readNkeySeed(file), { code: "bad_credentials" });
  writeFileSync(join(dir, "junk.nk"), "SUAJUNK\n", { mode: 0o600 });
  t.throws(() => readNkeySeed(join(dir, "junk.nk")), { code: "bad_credentials" });
});

test("certificates: server keys are mode 0600 and each certificate names the hosts clients dial and both TLS usages", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "custody-sec-certs-"));
  const certs = await makeCertificates(dir, [{ name: "east", hosts: ["127.0.0.1", "nats-east.local"] }]);
  const east = certs.servers["east"]!;
  t.is(statSync(east.keyFile).mode & 0o777, 0o600);
  t.is(statSync(certs.caKeyFile).mode & 0o777, 0o600);
  const text = execFileSync("openssl", ["x509", "-in", east.certFile, "-noout", "-text"], { encoding: "utf8" });
  t.regex(text, /IP Address:127\.0\.0\.1/);
  t.regex(text, /DNS:nats-east\.local/);
  t.regex(text, /TLS Web Server Authentication, TLS Web Client Authentication/);
  t.notThrows(() => execFileSync("openssl", ["verify", "-CAfile", certs.caFile, east.certFile], { stdio: "pipe" }));
  await t.throwsAsync(makeCertificates(dir, [{ name: "../x", hosts: ["127.0.0.1"] }]), { code: "invalid_principal" });
});

test("the status subject a writer listens to is its own volume's only", (t) => {
  t.true(mayReceive(writer, statusSubject("v1")));
  t.false(mayReceive(writer, statusSubject("v2")));
});

test("a base builder only announces bases to its own holder, and a replica only receives its volume's units", (t) => {
  const bb = permissionsFor("base-builder", "bb1", { holder: "h1", volume: "v1" });
  t.true(mayPublish(bb, "custody.v1.base.h1"));
  t.false(mayPublish(bb, "custody.v1.base.h2"));
  t.false(mayPublish(bb, unitSubject("h1", "v1", "l0")));
  const replica = permissionsFor("replica", "rep1", { volume: "v1", lanes: ["l0"] });
  t.true(mayReceive(replica, unitSubject("rep1", "v1", "l0")));
  t.false(mayReceive(replica, unitSubject("h1", "v1", "l0")));
  t.deepEqual(
    replica.publish.filter((s) => s.startsWith("custody.")),
    [replicaCatchupSubject("v1", "rep1")],
    "it answers only under allow_responses; it publishes nothing but its own catch-up requests",
  );
});

test("a replica asks for catch-up under its own id only, and only its volume's writer receives those requests", (t) => {
  const replica = permissionsFor("replica", "rep1", { volume: "v1", lanes: ["l0"] });
  t.true(mayPublish(replica, replicaCatchupSubject("v1", "rep1")));
  t.false(mayPublish(replica, replicaCatchupSubject("v1", "rep2")), "not as another replica");
  t.false(mayPublish(replica, replicaCatchupSubject("v2", "rep1")), "not to another volume's primary");
  t.true(mayReceive(writer, replicaCatchupSubject("v1", "rep1")));
  t.false(mayReceive(writer, replicaCatchupSubject("v2", "rep1")));
  for (const [name, p] of Object.entries(ALL)) if (name !== "writer") t.false(mayReceive(p, replicaCatchupSubject("v1", "rep1")), name);
});

test("an operator given commitRegions commits (bootstrap, holds, admissions) to those control streams only; without it, to none", (t) => {
  const committing = permissionsFor("operator", "op", { controlRegions: [REGION], commitRegions: [REGION] });
  t.true(mayPublish(committing, ctrlSubject(REGION)));
  t.false(mayPublish(committing, ctrlSubject("elsewhere")));
  t.false(mayPublish(operator, ctrlSubject(REGION)));
});

test("a role process answers service discovery (custody ps) on its own service subjects, and only the operator sends the requests", (t) => {
  t.true(mayReceive(h1, "$SRV.PING"));
  t.true(mayReceive(h1, "$SRV.STATS.custody-holder"));
  t.true(mayReceive(h1, "custody.v1.svc.holder.h1"));
  t.false(mayReceive(h1, "custody.v1.svc.holder.h2"), "a holder does not take another's stats endpoint");
  t.false(mayReceive(h1, "$SRV.STATS.custody-writer"));
  t.true(mayReceive(writer, "$SRV.INFO.custody-writer.abc"));
  t.true(mayPublish(operator, "$SRV.STATS.custody-holder"));
  for (const name of ["writer", "h1", "controller", "repair"]) t.false(mayPublish(ALL[name]!, "$SRV.PING"), name);
});

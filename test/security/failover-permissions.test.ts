/**
 * Who may ask for a writer failover (issue #18): the permissions of `custody.v1.failover.<volume>`
 * follow from the subject scheme. Pure: no NATS server (secured-attacks.test.ts has the server refuse it).
 */
import test from "ava";
import { mayPublish, mayReceive, permissionsFor, type SubjectPermissions } from "../../transport/security/index.ts";
import { failoverSubject } from "../../transport/protocol/subjects.ts";

const REGION = "r1";
const ALL: Record<string, SubjectPermissions> = {
  writer: permissionsFor("writer", "w1", { controlRegion: REGION, volume: "v1", lanes: [{ lane: "l0", firstHops: ["h1"] }] }),
  otherWriter: permissionsFor("writer", "w2", { controlRegion: REGION, volume: "v2", lanes: [{ lane: "l0", firstHops: ["h1"] }] }),
  holder: permissionsFor("holder", "h1", { controlRegion: REGION, lanes: [{ volume: "v1", lane: "l0", downstream: ["h3"] }] }),
  controller: permissionsFor("controller", "c1", { controlRegion: REGION, volumes: ["v1"], releaseTo: ["h1", "h2", "h3"] }),
  otherController: permissionsFor("controller", "c2", { controlRegion: REGION, volumes: ["v2"], releaseTo: ["h9"] }),
  repair: permissionsFor("repair", "r1", { controlRegion: REGION, volumes: ["v1"] }),
  operator: permissionsFor("operator", "op", { commitRegions: [REGION] }),
  baseBuilder: permissionsFor("base-builder", "b1", { holder: "h1", volume: "v1" }),
  replica: permissionsFor("replica", "rp1", { volume: "v1", lanes: ["l0"] }),
};

test("only the volume's writer and the operator may ask for its failover, and only the volume's controller receives the request", (t) => {
  const subject = failoverSubject("v1");
  for (const [name, p] of Object.entries(ALL)) {
    t.is(mayPublish(p, subject), name === "writer" || name === "operator", `${name} asks`);
    t.is(mayReceive(p, subject), name === "controller", `${name} receives`);
  }
});

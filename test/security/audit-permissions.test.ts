import test from "ava";
import { mayPublish, mayReceive, permissionsFor } from "../../transport/security/index.ts";
import { auditSubject } from "../../transport/protocol/index.ts";

const REGION = "r1";
const h1 = permissionsFor("holder", "h1", { controlRegion: REGION, lanes: [{ volume: "v1", lane: "l0", downstream: [] }] });
const h2 = permissionsFor("holder", "h2", { controlRegion: REGION, lanes: [{ volume: "v1", lane: "l0", downstream: [] }] });
const controller = permissionsFor("controller", "c1", { controlRegion: REGION, volumes: ["v1"], releaseTo: ["h1", "h2", "h3"] });
const writer = permissionsFor("writer", "w1", { controlRegion: REGION, volume: "v1", lanes: [{ lane: "l0", firstHops: ["h1"] }] });
const repair = permissionsFor("repair", "r1", { controlRegion: REGION, volumes: ["v1"] });

test("the controller may challenge any holder's retention; a holder receives only its own challenges", (t) => {
  t.true(mayPublish(controller, auditSubject("h1")));
  t.true(mayPublish(controller, auditSubject("h2")));
  t.true(mayReceive(h1, auditSubject("h1")));
  t.false(mayReceive(h1, auditSubject("h2")));
  t.true(mayReceive(h2, auditSubject("h2")));
});

test("no holder, writer or repair principal may send a retention challenge (a holder cannot audit its peers or itself)", (t) => {
  for (const p of [h1, h2, writer, repair]) {
    t.false(mayPublish(p, auditSubject("h1")));
    t.false(mayPublish(p, auditSubject("h2")));
  }
  t.false(mayReceive(controller, auditSubject("h1")));
});

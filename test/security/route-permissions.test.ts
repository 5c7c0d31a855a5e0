import test from "ava";
import { mayPublish, mayReceive, permissionsFor } from "../../transport/security/index.ts";
import { probeSubject, routeSubject } from "../../transport/protocol/subjects.ts";

const REGION = "r1";
const writer = permissionsFor("writer", "w1", { controlRegion: REGION, volume: "v1", lanes: [{ lane: "l0", firstHops: ["h1"] }] });
const h1 = permissionsFor("holder", "h1", { controlRegion: REGION, lanes: [{ volume: "v1", lane: "l0", downstream: ["h3"] }] });
const controller = permissionsFor("controller", "c1", { controlRegion: REGION, volumes: ["v1"], releaseTo: ["h1", "h2", "h3"] });
const operator = permissionsFor("operator", "op", {});
const repair = permissionsFor("repair", "r1", { controlRegion: REGION, volumes: ["v1"] });

test("writers and holders publish route measurements only as themselves", (t) => {
  t.true(mayPublish(writer, routeSubject("w1")));
  t.false(mayPublish(writer, routeSubject("h1")));
  t.true(mayPublish(h1, routeSubject("h1")));
  t.false(mayPublish(h1, routeSubject("w1")));
  for (const p of [controller, operator, repair]) t.false(mayPublish(p, routeSubject("h1")));
});

test("a prober receives only its own probes and answers, and may probe or answer any peer", (t) => {
  t.true(mayReceive(h1, probeSubject("h1")));
  t.false(mayReceive(h1, probeSubject("h3")));
  t.true(mayReceive(writer, probeSubject("w1")));
  t.false(mayReceive(writer, probeSubject("h1")));
  t.true(mayPublish(writer, probeSubject("h1")));
  t.true(mayPublish(h1, probeSubject("w1")), "a pong goes back to the upstream prober");
  t.false(mayPublish(controller, probeSubject("h1")));
});

test("the controller and the operator read every route measurement; a repair task reads none", (t) => {
  t.true(mayReceive(controller, routeSubject("h1")));
  t.true(mayReceive(operator, routeSubject("w1")));
  t.false(mayReceive(repair, routeSubject("h1")));
  t.false(mayReceive(h1, routeSubject("w1")));
});

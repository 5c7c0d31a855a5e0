/**
 * Who may speak the repair protocol (issue #18): the permissions of the repair subjects follow from
 * the subject scheme. Pure: no NATS server.
 */
import test from "ava";
import { mayPublish, mayReceive, permissionsFor, type SubjectPermissions } from "../../transport/security/index.ts";
import { repairSubject, repairTaskSubject, RepairOp } from "../../transport/protocol/subjects.ts";

const REGION = "r1";
const ALL: Record<string, SubjectPermissions> = {
  writer: permissionsFor("writer", "w1", { controlRegion: REGION, volume: "v1", lanes: [{ lane: "l0", firstHops: ["h1"] }] }),
  holder: permissionsFor("holder", "h1", { controlRegion: REGION, lanes: [{ volume: "v1", lane: "l0", downstream: ["h3"] }] }),
  controller: permissionsFor("controller", "c1", { controlRegion: REGION, volumes: ["v1"], releaseTo: ["h1", "h2", "h3"] }),
  otherController: permissionsFor("controller", "c2", { controlRegion: REGION, volumes: ["v2"], releaseTo: ["h9"] }),
  repair: permissionsFor("repair", "r1", { controlRegion: REGION, volumes: ["v1"] }),
  otherRepair: permissionsFor("repair", "r2", { controlRegion: REGION, volumes: ["v2"] }),
  operator: permissionsFor("operator", "op", { commitRegions: [REGION] }),
  baseBuilder: permissionsFor("base-builder", "b1", { holder: "h1", volume: "v1" }),
  replica: permissionsFor("replica", "rp1", { volume: "v1", lanes: ["l0"] }),
};

test("only the volume's controller receives its repair requests, and only the repair principal of that volume and that controller may send them", (t) => {
  for (const op of Object.values(RepairOp)) {
    const subject = repairSubject("v1", op);
    for (const [name, p] of Object.entries(ALL)) {
      t.is(mayReceive(p, subject), name === "controller", `${name} receives ${op}`);
      t.is(mayPublish(p, subject), name === "controller" || name === "repair", `${name} sends ${op}`);
    }
  }
});

test("only the volume's controller hands out its repair tasks, and only the repair principal of that volume takes them", (t) => {
  const subject = repairTaskSubject("v1");
  for (const [name, p] of Object.entries(ALL)) {
    t.is(mayPublish(p, subject), name === "controller", `${name} hands out`);
    t.is(mayReceive(p, subject), name === "repair", `${name} takes`);
  }
});

test("the repair principal still reads survivors' units of its volumes (not others') and offers them to the replacement", (t) => {
  t.true(mayPublish(ALL.repair!, "custody.v1.fetch.h1.v1"));
  t.false(mayPublish(ALL.repair!, "custody.v1.fetch.h1.v2"));
  t.true(mayPublish(ALL.repair!, "custody.v1.transfer.h3"));
});

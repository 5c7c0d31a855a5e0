/**
 * A role's start that fails with nats.js's bare `timeout` (issue #47: the controller printed
 * `error: timeout`) is reported naming the role, its control log and the server; a typed error is kept.
 */
import test from "ava";
import { errors as natsErrors } from "@nats-io/transport-node";
import { CustodyError } from "../../core/index.ts";
import { RoleStartError, startFailure } from "../../actors/runtime/role-start-error.ts";

test("a bare nats.js timeout becomes role_start_failed naming who and where; a typed error passes unchanged", (t) => {
  const timeout = new natsErrors.TimeoutError();
  const named = startFailure(timeout, "controller ctl-1", "control log ctl via 127.0.0.1:4222");
  t.true(named instanceof RoleStartError);
  t.is((named as RoleStartError).code, "role_start_failed");
  t.regex((named as Error).message, /^controller ctl-1 did not start \(control log ctl via 127\.0\.0\.1:4222\): a request to the server got no answer in time/);
  t.is((named as Error).cause, timeout);
  const typed = new CustodyError("control_log_missing", "control log ctl: stream CUSTODY_CTRL_ctl does not exist");
  t.is(startFailure(typed, "controller ctl-1", "x"), typed);
});

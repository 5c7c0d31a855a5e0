/**
 * Junk in the control log: the controller's NATS credentials may append to its region's control
 * stream, so the server stores whatever they publish there. Trusted readers (every role) must skip
 * an entry that does not decode, counted as `unreadable_entry`, and keep following the log.
 */
import { ctrlSubject } from "../../transport/protocol/index.ts";
import type { Attack } from "./attack.ts";

/** The attacks on the control log's readers, in the order they run. */
export function controlLogJunkAttacks(): Attack[] {
  return [
    {
      name: "junk control-log entry committed with the controller's NATS credentials",
      async run(ctx, before) {
        const c = await ctx.as("controller-ctl-1");
        // The 7 bytes of the original report: not msgpack, not a control event.
        const subject = ctrlSubject(ctx.net.controlRegion);
        c.transport.publish(subject, new Uint8Array([0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1, 0xc1]));
        await c.transport.flush();
        // The connection is shared by the run: only a denial of this subject counts here.
        if (c.violations.some((v) => v.subject === subject)) return { note: `server denied the publish on ${subject}` };
        const end = Date.now() + 8_000;
        for (;;) {
          const codes = (await ctx.read()).log.rejected.slice(before.log.rejected.length);
          if (codes.includes("unreadable_entry")) return { refusal: `fold skipped it: ${codes.join(", ")}` };
          if (Date.now() > end) return {};
          await new Promise((r) => setTimeout(r, 200));
        }
      },
    },
  ];
}

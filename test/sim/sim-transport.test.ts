import test from "ava";
import { seededRandom } from "../../core/random.ts";
import { SimNetwork } from "../../sim/sim-network.ts";
import { SimulatedClock } from "../../sim/simulated-clock.ts";
import { transportConformance } from "../kit/transport-conformance.ts";

// Faults off, auto-advancing virtual time: the simulated network must behave like core NATS.
transportConformance(
  test,
  async () => {
    const clock = new SimulatedClock({ autoAdvance: true });
    const net = new SimNetwork({ clock, random: seededRandom("conformance"), defaultEdge: { latencyMs: 2 } });
    const a = net.endpoint("a", "site-a");
    const b = net.endpoint("b", "site-b");
    return {
      a,
      b,
      cleanup: async () => {
        await Promise.all([a.close(), b.close()]);
        clock.setAutoAdvance(false);
      },
    };
  },
  "sim",
);

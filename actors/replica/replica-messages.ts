import { z } from "zod";
import { defineMessage, wireFields } from "../../transport/protocol/index.ts";

/**
 * Barrier between a volume writer and a replica consumer, by request/reply on the replica's unit
 * subject: `replica-barrier` asks the replica to make everything through `targetLsn` durable
 * (extent and local WAL); `replica-flushed` answers with its flushed LSN — all source writes up to
 * it are data- and metadata-durable on the replica (memo 4.3).
 */
export const replicaBarrierSpec = defineMessage({
  kind: "replica-barrier",
  version: 1,
  schema: z.object({ replica: wireFields.identifier, volume: wireFields.identifier, targetLsn: wireFields.uint }),
  maxBytes: 1024,
});

export const replicaFlushedSpec = defineMessage({
  kind: "replica-flushed",
  version: 1,
  schema: z.object({
    replica: wireFields.identifier,
    volume: wireFields.identifier,
    flushedLsn: wireFields.uint,
    reached: z.boolean(),
  }),
  maxBytes: 1024,
});

/**
 * Where retained bytes live. One list for the whole system: holders claim these in their
 * configuration and receipts (receipt version 1 understands exactly these evidence kinds), the
 * policy engine reasons about them, and an arena's segments are in one of the first two.
 */
export const Residency = {
  /** Ordinary process memory: survives nothing that kills the process or the host. */
  ram: "ram",
  /** Memory with an autonomous, evidenced preservation path (battery/capacitor + drain). */
  protected_ram: "protected_ram",
  /** A file whose write was followed by a completed fdatasync. */
  disk: "disk",
} as const;
export type Residency = (typeof Residency)[keyof typeof Residency];

/** Every residency, in a fixed order (for schemas: `z.enum(RESIDENCIES)`). */
export const RESIDENCIES = [Residency.ram, Residency.protected_ram, Residency.disk] as const;

/**
 * Where one arena segment's bytes are: in RAM or spilled to disk. Protected RAM is a property of
 * the host's memory, not of a segment, so a segment never has that residency.
 */
export type SegmentResidency = typeof Residency.ram | typeof Residency.disk;

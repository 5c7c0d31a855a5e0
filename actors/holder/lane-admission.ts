/** Outcome of offering a unit to the lane's arena actor. */
export type LaneAdmission =
  | { readonly kind: "stored"; readonly opened: boolean }
  | { readonly kind: "duplicate" }
  /** `counted`: the actor already counted the refusal (validation, lane log), else the arena did. */
  | { readonly kind: "refused"; readonly code: string; readonly counted: boolean };

// Admissions without fields of their own, shared (one frame's verdicts allocate none of them).
export const STORED_OPENED: LaneAdmission = Object.freeze({ kind: "stored", opened: true });
export const STORED: LaneAdmission = Object.freeze({ kind: "stored", opened: false });
export const DUPLICATE: LaneAdmission = Object.freeze({ kind: "duplicate" });

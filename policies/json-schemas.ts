import { z } from "zod";
import { evaluationStateSchema } from "./state-schema.ts";
import { placementInputSchema } from "./placement-schema.ts";

/**
 * The JSON Schemas (draft 2020-12, input side: defaulted fields are optional) of the two CLI
 * inputs, keyed by the file name they are published under in `docs/schemas/`. Pure.
 */
export function policyJsonSchemas(): Record<string, object> {
  return {
    "evaluation-state.schema.json": {
      title: "custody evaluate: state snapshot",
      ...z.toJSONSchema(evaluationStateSchema, { io: "input" }),
    },
    "placement-input.schema.json": {
      title: "custody place: candidates and contract",
      ...z.toJSONSchema(placementInputSchema, { io: "input" }),
    },
  };
}

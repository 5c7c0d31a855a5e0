import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseEvaluationState, type EvaluationState } from "../../policies/index.ts";

/** Path of the memo's worked example (US-East writer, RAM holders, waypoint, Europe, US-West). */
export const EXAMPLE_PATH = fileURLToPath(new URL("../../examples/memo-worked-example.state.json", import.meta.url));
export const CANDIDATES_PATH = fileURLToPath(new URL("../../examples/memo-worked-example.candidates.json", import.meta.url));

/** A fresh deep copy of the example's JSON, to edit per test (loosely typed so tests can break it). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function exampleJson(): any {
  return JSON.parse(readFileSync(EXAMPLE_PATH, "utf8"));
}

/** The example parsed, after `edit` changed its JSON. */
export function exampleState(edit: (j: any) => void = () => {}): EvaluationState {
  const j = exampleJson();
  edit(j);
  return parseEvaluationState(j);
}

export const EAST_AND_WEST = "US-East and US-West lost";

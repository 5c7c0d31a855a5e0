import test from "ava";
import { readFileSync } from "node:fs";
import { policyJsonSchemas } from "../../policies/index.ts";

test("the JSON Schemas published in docs/schemas match the zod schemas the CLI validates with", (t) => {
  for (const [name, schema] of Object.entries(policyJsonSchemas())) {
    const published = JSON.parse(readFileSync(new URL(`../../docs/schemas/${name}`, import.meta.url), "utf8"));
    t.deepEqual(published, JSON.parse(JSON.stringify(schema)), `docs/schemas/${name} is out of date`);
  }
});

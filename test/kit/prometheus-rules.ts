import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "./repo-root.ts";

/** The folder of the shipped Prometheus files (rules, their promtool unit tests, the scrape config). */
export const PROMETHEUS_EXAMPLES = join(repoRoot(), "examples", "prometheus");

/** The shipped rule file's text. */
export function shippedRules(): string {
  return readFileSync(join(PROMETHEUS_EXAMPLES, "custody-rules.yml"), "utf8");
}

/** The alert names of a rule file, in order. */
export function alertNames(rules: string): string[] {
  return [...rules.matchAll(/^\s*- alert: (\S+)\s*$/gm)].map((m) => m[1]!);
}

/**
 * The same rules with every alert's `for:` replaced by `duration` (e.g. "3s"): a test's Prometheus
 * then fires in seconds on exactly the shipped expressions. Throws when the file has none to replace.
 */
export function withFor(rules: string, duration: string): string {
  let n = 0;
  const out = rules.replace(/^(\s+for: )\S+$/gm, (_m, lead: string) => {
    n++;
    return `${lead}${duration}`;
  });
  if (n !== alertNames(rules).length) throw new Error(`expected one for: per alert, replaced ${n} for ${alertNames(rules).length} alerts`);
  return out;
}

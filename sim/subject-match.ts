/**
 * NATS subject rules for the simulated network: dot-separated non-empty tokens without
 * whitespace; subscriptions may use `*` (exactly one token) and a final `>` (one or more tokens).
 */

/** True when `subject` is a valid publish subject (no wildcards). */
export function isPublishSubject(subject: string): boolean {
  return validTokens(subject, false);
}

/** True when `subject` is a valid subscription subject (`*` anywhere, `>` only last). */
export function isSubscribeSubject(subject: string): boolean {
  return validTokens(subject, true);
}

// Subjects repeat endlessly in a run; remember the valid ones (bounded, so memory stays small).
const validCache = new Set<string>();

function validTokens(subject: string, wildcards: boolean): boolean {
  if (typeof subject !== "string" || subject.length === 0) return false;
  const key = wildcards ? `S${subject}` : `P${subject}`;
  if (validCache.has(key)) return true;
  const ok = checkTokens(subject, wildcards);
  if (ok && validCache.size < 10_000) validCache.add(key);
  return ok;
}

function checkTokens(subject: string, wildcards: boolean): boolean {
  const tokens = subject.split(".");
  return tokens.every((tok, i) => {
    if (tok.length === 0 || /\s/.test(tok)) return false;
    if (tok === "*") return wildcards;
    if (tok === ">") return wildcards && i === tokens.length - 1;
    return !tok.includes("*") && !tok.includes(">");
  });
}

/** True when the publish subject `subject` matches the subscription `pattern`. */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (!pattern.includes("*") && !pattern.includes(">")) return pattern === subject;
  return tokensMatch(pattern.split("."), subject.split("."));
}

/** `subjectMatches` on pre-split tokens (the network splits each pattern once, each subject once per publish). */
export function tokensMatch(p: readonly string[], s: readonly string[]): boolean {
  for (let i = 0; i < p.length; i++) {
    const tok = p[i]!;
    if (tok === ">") return s.length > i;
    if (i >= s.length) return false;
    if (tok !== "*" && tok !== s[i]) return false;
  }
  return p.length === s.length;
}

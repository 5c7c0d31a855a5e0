/**
 * What a permission list allows, judged the way nats-server judges it: a pattern token `*` matches
 * one token, a final `>` one or more. Pure; lets setup code and tests ask "may this principal
 * publish here?" without a server.
 */
import type { SubjectPermissions } from "./principal-permissions.ts";

/** True when `pattern` (possibly with wildcards) covers the concrete `subject`. */
export function patternCovers(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    const tok = p[i]!;
    if (tok === ">") return i === p.length - 1 && s.length > i;
    if (i >= s.length) return false;
    if (tok !== "*" && tok !== s[i]) return false;
  }
  return p.length === s.length;
}

/** True when the permissions let their principal publish on `subject` (replies under `allow_responses` aside). */
export function mayPublish(perms: SubjectPermissions, subject: string): boolean {
  return perms.publish.some((p) => patternCovers(p, subject));
}

/** True when the permissions let their principal receive messages published on `subject`. */
export function mayReceive(perms: SubjectPermissions, subject: string): boolean {
  return perms.subscribe.some((p) => patternCovers(p, subject));
}

/**
 * Which problem a config or input file that failed validation is reported by. A misspelled key
 * shows up twice: as an unknown key and, when the key it misspells is required, as that key
 * missing. The unknown key is the cause, so it is reported, with the missing key it is closest
 * to as the likely meant one; a file without unknown keys is reported by its first issue.
 */

/** What a validation issue (zod's) carries that a report needs. */
export interface SchemaIssue {
  readonly code: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
  /** The unknown keys of an `unrecognized_keys` issue. */
  readonly keys?: readonly string[];
}

/** The problem to report: the path of the offending key and what is wrong with it. */
export interface ReportedIssue {
  /** Full path of the offending key (an unknown key's path ends with that key). */
  readonly path: readonly PropertyKey[];
  /** `unknown key` (with a `did you mean …?` when a missing key is close), else the issue's own message. */
  readonly problem: string;
  readonly unknownKey: boolean;
}

/** Edit distance between `a` and `b` (insert, delete, substitute, swap of neighbours). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

const samePath = (a: readonly PropertyKey[], b: readonly PropertyKey[]) =>
  a.length === b.length && a.every((p, i) => p === b[i]);

/** The issue a file's validation failure is reported by (see the module comment). `issues` must not be empty. */
export function reportedIssue(issues: readonly SchemaIssue[]): ReportedIssue {
  const unknown = issues.find((i) => i.code === "unrecognized_keys" && (i.keys?.length ?? 0) > 0);
  if (unknown === undefined) {
    const first = issues[0]!;
    return { path: first.path, problem: first.message, unknownKey: false };
  }
  const key = unknown.keys![0]!;
  // The keys with an issue of their own beside the unknown one (a required key missing is one).
  const siblings = issues.filter(
    (i) => i !== unknown && i.path.length === unknown.path.length + 1 && samePath(i.path.slice(0, -1), unknown.path),
  );
  const names = siblings.map((i) => i.path[i.path.length - 1]).filter((p): p is string => typeof p === "string");
  const close = names
    .map((n) => ({ n, d: editDistance(key.toLowerCase(), n.toLowerCase()) }))
    .filter((c) => c.d <= Math.max(2, Math.floor(c.n.length / 4)))
    .sort((x, y) => x.d - y.d)[0];
  return {
    path: [...unknown.path, key],
    problem: `unknown key${close !== undefined ? ` (did you mean ${close.n}?)` : ""}`,
    unknownKey: true,
  };
}

/** A path as `holders.1.residency` (`(root)` for the empty path). */
export function dottedPath(path: readonly PropertyKey[]): string {
  return path.length === 0 ? "(root)" : path.map(String).join(".");
}

/**
 * The reported issue as one phrase with a dotted path: `unknown key holders.1.residencey (did you
 * mean residency?)`, or `holders.0.site: Invalid input: expected string, received undefined`.
 */
export function issueText(issue: ReportedIssue): string {
  const path = dottedPath(issue.path);
  return issue.unknownKey ? issue.problem.replace(/^unknown key/, `unknown key ${path}`) : `${path}: ${issue.problem}`;
}

/** Public surface of `core/`: seams every layer shares (errors, clock, files, counters, timers). */
export { BLOCK_SIZE } from "./block-size.ts";
export { systemClock, type Clock } from "./clock.ts";
export { errorCode, failWith, formatTable, type ErrorOutput } from "./command-output.ts";
export { Counters } from "./counters.ts";
export { CrashFileLayer } from "./crash-file-layer.ts";
export { CustodyError, isCustodyError } from "./custody-error.ts";
export { DurationWindow } from "./duration-window.ts";
export { nodeFileLayer, parentDir, type FileHandleLike, type FileLayer } from "./file-layer.ts";
export { MAX_IDENTIFIER_LENGTH, identifierProblem, isIdentifier } from "./identifier.ts";
export { holderLaneKey, laneKey } from "./lane-key.ts";
export { dottedPath, issueText, reportedIssue, type ReportedIssue, type SchemaIssue } from "./schema-issue.ts";
export { processRunning } from "./process-running.ts";
export { seededRandom, type Random } from "./random.ts";
export { cryptoRandom } from "./random.ts";
export { Residency, type SegmentResidency } from "./residency.ts";
export type { TimerArm } from "./timer-arm.ts";

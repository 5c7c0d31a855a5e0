/**
 * The launcher ↔ actor-process channel: Node IPC (structured clone, so Uint8Arrays cross as
 * bytes). The launcher sends `{ id, op, args }`; the process answers `{ id, ok, result }` or
 * `{ id, ok: false, error }`, and announces `{ ready: true }` once its actor runs (or
 * `{ fatal }` before exiting). Actors still talk to each other only over NATS; this channel is the
 * demo operator's hand on each process (drive the workload, read state, stop).
 */
import type { ChildProcess } from "node:child_process";
import { CustodyError } from "../core/index.ts";

/** Roles an actor process can play. */
export const ActorRole = { Holder: "holder", Writer: "writer", Controller: "controller" } as const;
export type ActorRole = (typeof ActorRole)[keyof typeof ActorRole];

/** What the launcher writes to `--config` for one process. */
export interface ActorProcessConfig {
  readonly role: ActorRole;
  readonly id: string;
  readonly deploymentPath: string;
  readonly runDir: string;
  readonly natsUrl: string;
  readonly keysPath: string;
}

/** Thrown when an actor process does not answer, exits, or reports an error. */
export class ActorCallError extends CustodyError {
  constructor(message: string, detail: Record<string, unknown>) {
    super("actor_call_failed", message, detail);
  }
}

interface Reply {
  id?: number;
  ok?: boolean;
  result?: unknown;
  error?: { code: string; message: string };
  ready?: boolean;
  fatal?: string;
}

/** Request/response over one child's IPC channel. */
export class ActorClient {
  private next = 1;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  readonly ready: Promise<void>;

  constructor(
    readonly name: string,
    private readonly child: ChildProcess,
  ) {
    let onReady!: () => void;
    let onFail!: (e: Error) => void;
    this.ready = new Promise<void>((res, rej) => {
      onReady = res;
      onFail = rej;
    });
    this.ready.catch(() => undefined);
    child.on("message", (m: Reply) => {
      if (m.ready) return onReady();
      if (m.fatal !== undefined) return onFail(new ActorCallError(`${name} failed to start: ${m.fatal}`, { name }));
      const w = m.id === undefined ? undefined : this.waiting.get(m.id);
      if (w === undefined) return;
      this.waiting.delete(m.id!);
      if (m.ok) w.resolve(m.result);
      else w.reject(new ActorCallError(`${name}: ${m.error?.message ?? "error"}`, { name, code: m.error?.code }));
    });
    child.once("exit", (code, signal) => {
      const err = new ActorCallError(`${name} exited (${code ?? signal})`, { name });
      onFail(err);
      for (const w of this.waiting.values()) w.reject(err);
      this.waiting.clear();
    });
  }

  /** Calls `op` in the process; rejects with ActorCallError on error, exit or timeout. */
  call<T = unknown>(op: string, args: Record<string, unknown> = {}, timeoutMs = 15_000): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiting.delete(id);
        reject(new ActorCallError(`${this.name}: ${op} timed out after ${timeoutMs} ms`, { name: this.name, op }));
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(t);
          resolve(v as T);
        },
        reject: (e) => {
          clearTimeout(t);
          reject(e);
        },
      });
      try {
        this.child.send({ id, op, args });
      } catch (err) {
        this.waiting.delete(id);
        clearTimeout(t);
        reject(new ActorCallError(`${this.name}: cannot send ${op}: ${(err as Error).message}`, { name: this.name, op }));
      }
    });
  }
}

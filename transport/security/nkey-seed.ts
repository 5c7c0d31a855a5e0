/**
 * A principal's NATS credentials: an nkey user seed in a file of its own, mode 0600. The seed is
 * the secret (it signs the server's connect challenge); the public key goes into the server's
 * `authorization` block.
 */
import { closeSync, fstatSync, openSync, readFileSync, writeSync } from "node:fs";
import { nkeys } from "@nats-io/transport-node";
import { SecurityError, SecurityErrorCode } from "./security-error.ts";

/** What a seed file holds, as the server and client need it. */
export interface NkeyCredentials {
  /** Public user nkey (`U...`), for the server config. */
  readonly publicKey: string;
  /** The seed file written (mode 0600). */
  readonly seedFile: string;
}

/**
 * Creates a new user nkey and writes its seed to `file` with mode 0600. Refuses to overwrite an
 * existing file (a principal's credentials are made once): throws SecurityError `bad_credentials`.
 */
export function writeNkeySeed(file: string): NkeyCredentials {
  const kp = nkeys.createUser();
  const publicKey = kp.getPublicKey();
  const seed = kp.getSeed();
  let fd: number;
  try {
    // `wx`: fail if it exists; the mode applies at creation, so the seed is never world-readable.
    fd = openSync(file, "wx", 0o600);
  } catch (err) {
    throw new SecurityError(
      SecurityErrorCode.BadCredentials,
      `cannot create seed file ${file}: ${(err as Error).message}`,
      { file },
      { cause: err },
    );
  }
  try {
    writeSync(fd, seed);
    writeSync(fd, "\n");
  } finally {
    closeSync(fd);
    kp.clear(); // wipes the seed bytes held in memory
  }
  return { publicKey, seedFile: file };
}

/**
 * Reads a user seed file for `nkeyAuthenticator`. Throws SecurityError `bad_credentials` when the
 * file is unreadable, is group- or world-accessible, or does not hold a user seed.
 */
export function readNkeySeed(file: string): { seed: Uint8Array; publicKey: string } {
  let text: string;
  try {
    const fd = openSync(file, "r");
    try {
      const mode = fstatSync(fd).mode & 0o777;
      if ((mode & 0o077) !== 0) {
        throw new SecurityError(
          SecurityErrorCode.BadCredentials,
          `seed file ${file} has mode ${mode.toString(8)}; it must be 600 (owner only)`,
          { file, mode },
        );
      }
      text = readFileSync(fd, "utf8").trim();
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if (err instanceof SecurityError) throw err;
    throw new SecurityError(
      SecurityErrorCode.BadCredentials,
      `cannot read seed file ${file}: ${(err as Error).message}`,
      { file },
      { cause: err },
    );
  }
  const seed = new TextEncoder().encode(text);
  try {
    const kp = nkeys.fromSeed(seed);
    const publicKey = kp.getPublicKey();
    if (!publicKey.startsWith("U")) throw new Error("not a user seed");
    return { seed, publicKey };
  } catch (err) {
    throw new SecurityError(
      SecurityErrorCode.BadCredentials,
      `seed file ${file} does not hold a user nkey seed`,
      { file },
      { cause: err },
    );
  }
}

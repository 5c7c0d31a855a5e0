import { readFileSync } from "node:fs";
import { CustodyError } from "../../core/index.ts";

/** Bytes of a volume's data key (AES-256). */
export const DATA_KEY_BYTES = 32;

/** Thrown when a key file holds neither accepted form of a data key. */
export class InvalidKeyFileError extends CustodyError {
  constructor(path: string, why: string) {
    super(
      "invalid_key_file",
      `${path}: ${why}; a data key file holds the key's 32 bytes as they are (what custody init writes as data.key) ` +
        `or as 64 hex digits`,
      { path },
    );
  }
}

const HEX_KEY = /^[0-9a-fA-F]{64}\r?\n?$/;
const HEX_ONLY = /^[0-9a-fA-F]+$/;

/**
 * Reads a volume's 32-byte data key from `path`, in either of two forms that cannot be taken for
 * each other: exactly 32 bytes (the raw key, as `custody init` writes `data.key` and the roles
 * read it), or 64 hex digits with at most a trailing newline (`xxd -p -c 32 data.key`). A 32-byte
 * file made only of hex digits is refused: it reads as half a key in hex, and a random key is
 * never all hex digits. Throws InvalidKeyFileError naming the file and what it holds.
 */
export function readDataKeyFile(path: string): Uint8Array {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new InvalidKeyFileError(
      path,
      `cannot read it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  const text = bytes.toString("latin1");
  if (bytes.length === DATA_KEY_BYTES) {
    if (HEX_ONLY.test(text))
      throw new InvalidKeyFileError(path, "it holds 32 hex digits (a 128-bit key in hex?), not a 256-bit key");
    return new Uint8Array(bytes);
  }
  if (HEX_KEY.test(text)) return new Uint8Array(Buffer.from(text.slice(0, 64), "hex"));
  throw new InvalidKeyFileError(path, `it holds ${bytes.length} bytes`);
}

import { randomBytes } from "node:crypto";
import { CustodyError } from "../core/index.ts";

/** Length of a volume data key (AES-256). */
export const DATA_KEY_BYTES = 32;

/** Thrown when a principal asks a key authority for a key it is not authorized to hold. */
export class KeyAccessDeniedError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("key_access_denied", "the key authority refused this principal", detail);
  }
}

/** Thrown when the key authority is unreachable or lost (its site or dependency failed). */
export class KeyAuthorityUnavailableError extends CustodyError {
  constructor(detail: Record<string, unknown>) {
    super("key_authority_unavailable", "the key authority is unavailable", detail);
  }
}

/**
 * A named key authority: issues one AES-256 data key per volume and hands it only to principals
 * authorized for that volume (the volume's writers and recovery workers — never holders, which
 * only ever see ciphertext). The authority lives at a site; when `lose()` is called (its site
 * failed) every request fails, which is exactly what the policy engine's `no_key_path` models.
 */
export class KeyAuthority {
  private readonly keys = new Map<string, Uint8Array>();
  private readonly grants = new Map<string, Set<string>>();
  private lost = false;

  constructor(
    /** Authority name (matches `keyAuthorities[].id` in the evaluation state). */
    readonly id: string,
    /** Site the authority runs at. */
    readonly site: string,
    private readonly random: (n: number) => Uint8Array = (n) => new Uint8Array(randomBytes(n)),
  ) {}

  /** Allows `principal` to obtain the data key of `volume`. */
  authorize(volume: string, principal: string): void {
    const s = this.grants.get(volume) ?? new Set<string>();
    s.add(principal);
    this.grants.set(volume, s);
  }

  /**
   * The data key of `volume` (created on first authorized use). Throws KeyAccessDeniedError for
   * an unauthorized principal and KeyAuthorityUnavailableError once the authority is lost.
   * Returns a copy: callers cannot alter the authority's key.
   */
  dataKey(volume: string, principal: string): Uint8Array {
    if (this.lost) throw new KeyAuthorityUnavailableError({ authority: this.id, volume });
    if (!this.grants.get(volume)?.has(principal))
      throw new KeyAccessDeniedError({ authority: this.id, volume, principal });
    let k = this.keys.get(volume);
    if (k === undefined) {
      k = this.random(DATA_KEY_BYTES);
      this.keys.set(volume, k);
    }
    return new Uint8Array(k);
  }

  /** The authority's site failed: no key is ever handed out again. */
  lose(): void {
    this.lost = true;
  }

  /** True until `lose()`. */
  get available(): boolean {
    return !this.lost;
  }
}

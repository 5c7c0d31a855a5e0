import { readFileSync, statSync } from "node:fs";
import type { ControlSigner, ControlTrust } from "../../custody/index.ts";
import { privateKeyFromPkcs8, publicKeyFromRaw } from "../../custody/index.ts";
import { RoleConfigError, type ControlTrustConfig } from "./role-config.ts";

/** What a role needs to read (and, for a controller, write) a signed control log. */
export interface ControlTrustFiles {
  readonly trust?: ControlTrust;
  /** Present when the section names a signing key: the principal `id` signs with it. */
  signer?(id: string): ControlSigner;
}

/** Reads a raw Ed25519 public key written as 64 hex digits. */
export function readPublicKeyHex(file: string) {
  const text = readFileSync(file, "utf8").trim();
  if (!/^[0-9a-f]{64}$/i.test(text))
    throw new RoleConfigError(`${file}: expected 64 hex digits of a raw Ed25519 public key`, {
      file,
      path: "controlTrust.operators.publicKeyFile",
    });
  return publicKeyFromRaw(new Uint8Array(Buffer.from(text, "hex")));
}

/** Loads a role's `controlTrust` section; an absent section means an unsigned log. */
export function loadControlTrust(section: ControlTrustConfig | undefined): ControlTrustFiles {
  if (section === undefined) return {};
  const trust: ControlTrust = {
    operators: Object.fromEntries(section.operators.map((o) => [o.id, readPublicKeyHex(o.publicKeyFile)])),
  };
  const keyFile = section.signingKeyFile;
  if (keyFile === undefined) return { trust };
  const mode = statSync(keyFile).mode & 0o777;
  if ((mode & 0o077) !== 0)
    throw new RoleConfigError(`signing key ${keyFile} has mode ${mode.toString(8)}; it must be 600 (owner only)`, {
      file: keyFile,
      path: "controlTrust.signingKeyFile",
    });
  const privateKey = privateKeyFromPkcs8(readFileSync(keyFile));
  return { trust, signer: (id) => ({ id, privateKey }) };
}

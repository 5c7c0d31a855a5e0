/**
 * Setup-time TLS material, made with the system's `openssl`: one private CA and, signed by it,
 * one certificate per server. Server certificates carry both TLS usages (a server accepts clients
 * and, on cluster routes and gateways, also dials its peers with the same certificate) and the
 * names and addresses clients dial (subjectAltName). Private keys are written with mode 0600.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { SecurityError, SecurityErrorCode } from "./security-error.ts";

const run = promisify(execFile);
const OPENSSL_BIN = process.env["OPENSSL_BIN"] ?? "openssl";

/** One server to certify: a file-name-safe name and the DNS names / IP addresses it is reached at. */
export interface ServerIdentity {
  readonly name: string;
  readonly hosts: readonly string[];
}

/** The files `makeCertificates` wrote. */
export interface CertificateSet {
  /** The CA certificate every client and server trusts (`tls.ca_file`, client `caFile`). */
  readonly caFile: string;
  /** The CA's private key (mode 0600): needed only to certify more servers later. */
  readonly caKeyFile: string;
  /** Per server name: its certificate and private key (mode 0600). */
  readonly servers: Readonly<Record<string, { readonly certFile: string; readonly keyFile: string }>>;
}

const SAFE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;
const HOST = /^[A-Za-z0-9.:-]{1,253}$/;

async function openssl(args: readonly string[], what: string): Promise<void> {
  try {
    await run(OPENSSL_BIN, [...args], { timeout: 60_000 });
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr ?? "";
    throw new SecurityError(
      SecurityErrorCode.CertificateFailed,
      `openssl failed (${what}): ${stderr.trim() || (err as Error).message}`,
      { what },
      { cause: err },
    );
  }
}

const KEY_ARGS = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/**
 * Makes a CA and a certificate per server in `dir` (created with mode 0700 if absent), valid
 * for `days` (default 825). Throws SecurityError `certificate_failed` when openssl fails and
 * `invalid_principal` for a server name or host that cannot go into a file name or a SAN.
 */
export async function makeCertificates(
  dir: string,
  servers: readonly ServerIdentity[],
  opts: { days?: number; caName?: string } = {},
): Promise<CertificateSet> {
  for (const s of servers) checkServerIdentity(s);
  const days = String(opts.days ?? 825);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = await makeCa(dir, days, opts.caName ?? "custody-ca");
  const out: Record<string, { certFile: string; keyFile: string }> = {};
  for (const s of servers) out[s.name] = await makeServerCertificate(dir, s, ca, days);
  rmSync(join(dir, "ca.srl"), { force: true });
  return { ...ca, servers: out };
}

/** A server's name and hosts must fit a file name and a SAN. */
function checkServerIdentity(s: ServerIdentity): void {
  if (!SAFE_NAME.test(s.name))
    throw new SecurityError(SecurityErrorCode.InvalidPrincipal, `bad server name ${JSON.stringify(s.name)}`, {
      name: s.name,
    });
  if (s.hosts.length === 0 || s.hosts.some((h) => !HOST.test(h))) {
    throw new SecurityError(
      SecurityErrorCode.InvalidPrincipal,
      `server ${s.name}: bad host list ${JSON.stringify(s.hosts)}`,
      { name: s.name },
    );
  }
}

/** The self-signed CA (`ca.pem`, and its key `ca-key.pem` with mode 0600). */
async function makeCa(dir: string, days: string, caName: string): Promise<{ caFile: string; caKeyFile: string }> {
  const caFile = join(dir, "ca.pem");
  const caKeyFile = join(dir, "ca-key.pem");
  await openssl(
    [
      "req",
      "-x509",
      ...KEY_ARGS,
      "-keyout",
      caKeyFile,
      "-out",
      caFile,
      "-days",
      days,
      "-subj",
      `/CN=${caName}`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ],
    "CA",
  );
  chmodSync(caKeyFile, 0o600);
  return { caFile, caKeyFile };
}

/** A server's key (mode 0600) and its certificate signed by the CA, for server and client use. */
async function makeServerCertificate(
  dir: string,
  s: ServerIdentity,
  { caFile, caKeyFile }: { caFile: string; caKeyFile: string },
  days: string,
): Promise<{ certFile: string; keyFile: string }> {
  const keyFile = join(dir, `${s.name}-key.pem`);
  const certFile = join(dir, `${s.name}-cert.pem`);
  const csr = join(dir, `${s.name}.csr`);
  const ext = join(dir, `${s.name}.ext`);
  const san = s.hosts.map((h) => (IPV4.test(h) || h.includes(":") ? `IP:${h}` : `DNS:${h}`)).join(",");
  writeFileSync(
    ext,
    [
      `subjectAltName=${san}`,
      "basicConstraints=CA:FALSE",
      "keyUsage=critical,digitalSignature,keyAgreement",
      "extendedKeyUsage=serverAuth,clientAuth",
      "",
    ].join("\n"),
  );
  try {
    await openssl(
      ["req", "-new", ...KEY_ARGS, "-keyout", keyFile, "-out", csr, "-subj", `/CN=${s.name}`],
      `key of ${s.name}`,
    );
    chmodSync(keyFile, 0o600);
    await openssl(
      [
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        caFile,
        "-CAkey",
        caKeyFile,
        "-CAcreateserial",
        "-out",
        certFile,
        "-days",
        days,
        "-extfile",
        ext,
      ],
      `certificate of ${s.name}`,
    );
  } finally {
    rmSync(csr, { force: true });
    rmSync(ext, { force: true });
  }
  return { certFile, keyFile };
}

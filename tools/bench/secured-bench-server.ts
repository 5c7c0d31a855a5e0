import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  makeCertificates,
  readNkeySeed,
  renderServerAuth,
  renderTlsBlock,
  writeNkeySeed,
} from "../../transport/security/index.ts";
import { startNatsServer } from "../../test/kit/index.ts";

type NatsServerHandle = Awaited<ReturnType<typeof startNatsServer>>;
import { NatsTransport } from "../../transport/index.ts";

/**
 * bench:holder's secured nats-server: nkey authentication (no anonymous user) with publish and
 * subscribe permissions checked by the server, and TLS on the client port with a certificate made
 * by openssl — the same rendering the deployments use (transport/security/). Every bench connection logs in
 * as the one bench user, whose permissions cover the custody subjects the chains use
 * (`custody.v1.>`) and its inbox: a bench creates lanes and holders per row, which a deployment's
 * per-principal permission lists cannot name in advance.
 */
export interface SecuredBenchServer {
  readonly server: NatsServerHandle;
  /** A connection as the bench user, over TLS. */
  connect(name: string): Promise<NatsTransport>;
  /** What another process needs to connect the same way (the bench's own holder process). */
  readonly connectOptions: {
    readonly servers: string;
    readonly nkeySeedFile: string;
    readonly caFile: string;
    readonly inboxPrefix: string;
  };
  stop(): Promise<void>;
}

/** Starts the secured server (`dir` is removed by `stop`). */
export async function startSecuredBenchServer(): Promise<SecuredBenchServer> {
  const dir = mkdtempSync(join(tmpdir(), "custody-bench-secured-"));
  const certs = await makeCertificates(join(dir, "tls"), [{ name: "nats", hosts: ["127.0.0.1", "localhost"] }]);
  const seedFile = join(dir, "bench.nk");
  const user = writeNkeySeed(seedFile);
  const inboxPrefix = "_INBOX.bench";
  const permissions = {
    publish: ["custody.v1.>"],
    subscribe: ["custody.v1.>", `${inboxPrefix}.>`],
    allowResponses: true,
    inboxPrefix,
  };
  const server = await startNatsServer({
    jetstream: false,
    security: [
      renderServerAuth([{ nkey: user.publicKey, permissions, label: "bench" }]),
      renderTlsBlock({ ...certs.servers["nats"]!, caFile: certs.caFile }, { verify: false }),
    ].join("\n"),
  });
  const seed = readNkeySeed(seedFile).seed;
  return {
    server,
    connect: (name) =>
      NatsTransport.connect({ servers: server.url, name, nkeySeed: seed, caFile: certs.caFile, inboxPrefix }),
    connectOptions: { servers: server.url, nkeySeedFile: seedFile, caFile: certs.caFile, inboxPrefix },
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

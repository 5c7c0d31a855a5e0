import test from "ava";
import { randomBytes } from "node:crypto";
import { generateHolderKeyPair, publicKeyFromRaw } from "../../custody/signing.ts";
import { MAX_ATTESTED_UNITS, readUnitAttestation, signUnitAttestation, UnitAuthError, verifyUnitAttestation } from "../../custody/unit-attestation.ts";
import { UnitAuthenticator, WriterKeyring } from "../../custody/unit-authenticator.ts";
import { writerSigningKey, writerUnitSigner } from "../../custody/unit-signer.ts";
import { makeTransportUnit, type TransportUnit } from "../../lanes/transport-unit.ts";
import { encodeMessage, unitSpec } from "../../transport/protocol/wire/index.ts";

const unit = (first: number, term = 1, lane = "l0"): TransportUnit => makeTransportUnit({ volume: "v", lane, term, firstSeq: first, lastSeq: first, commitTs: [1], payload: new Uint8Array([first & 255]) });

test("one signature covers a batch: every unit of it verifies, and a unit of another term, lane or content does not", (t) => {
  const key = generateHolderKeyPair();
  const units = [1, 2, 3].map((s) => unit(s));
  const auth = new UnitAuthenticator(new WriterKeyring().name("v", 1, key.publicKey));
  const [token] = writerUnitSigner(key.privateKey).sign(units.map((u) => encodeMessage(unitSpec, u)));
  t.true(units.every((_, i, all) => auth.check([token!], [all[i]!])[0]!.ok));
  const other = [unit(2, 2), unit(2, 1, "l1"), { ...unit(2), digest: new Uint8Array(32) }];
  t.deepEqual(auth.check([token!], other).map((v) => (v.ok ? "ok" : v.code)), ["unit_not_attested", "unit_not_attested", "unit_not_attested"]);
  t.deepEqual(auth.check([], [units[0]!]).map((v) => (v.ok ? "ok" : v.code)), ["unit_unsigned"]);
});

test("a signed batch changed in any byte no longer verifies, and a malformed one is a typed error", (t) => {
  const key = generateHolderKeyPair();
  const bytes = signUnitAttestation(key.privateKey, "v", "l0", 1, [unit(1), unit(2)]);
  t.true(verifyUnitAttestation(publicKeyFromRaw(key.publicKey), readUnitAttestation(bytes)));
  for (const at of [0, 5, 20, bytes.length - 1]) {
    const bad = bytes.slice();
    bad[at]! ^= 1;
    let ok = false;
    try {
      ok = verifyUnitAttestation(publicKeyFromRaw(key.publicKey), readUnitAttestation(bad));
    } catch (err) {
      t.true(err instanceof UnitAuthError);
    }
    t.false(ok, `byte ${at} flipped`);
  }
  t.throws(() => readUnitAttestation(bytes.subarray(0, bytes.length - 1)), { instanceOf: UnitAuthError });
  t.throws(() => signUnitAttestation(key.privateKey, "v", "l0", 1, Array.from({ length: MAX_ATTESTED_UNITS + 1 }, (_, i) => unit(i + 1))), { instanceOf: UnitAuthError });
});

test("the writer key follows the term it was named from: an older term's units verify under the older key, a newer term's under the newer", (t) => {
  const old = generateHolderKeyPair();
  const next = generateHolderKeyPair();
  const ring = new WriterKeyring().name("v", 1, old.publicKey).name("v", 5, next.publicKey);
  const auth = new UnitAuthenticator(ring);
  const tok = (k: typeof old, u: TransportUnit) => writerUnitSigner(k.privateKey).sign([encodeMessage(unitSpec, u)])[0]!;
  t.true(auth.check([tok(old, unit(1, 4))], [unit(1, 4)])[0]!.ok);
  t.true(auth.check([tok(next, unit(9, 5))], [unit(9, 5)])[0]!.ok);
  t.deepEqual(auth.check([tok(old, unit(10, 5))], [unit(10, 5)])[0], { ok: false, code: "unit_bad_signature" });
  t.deepEqual(auth.check([tok(old, unit(1, 0))], [unit(1, 0)])[0], { ok: false, code: "unit_signer_unknown" });
});

test("the writer key derived from a data key is the same for every holder of that data key and differs for another", (t) => {
  const dataKey = new Uint8Array(randomBytes(32));
  t.deepEqual(writerSigningKey(dataKey).publicKey, writerSigningKey(new Uint8Array(dataKey)).publicKey);
  t.notDeepEqual(writerSigningKey(dataKey).publicKey, writerSigningKey(new Uint8Array(randomBytes(32))).publicKey);
  const w = writerSigningKey(dataKey);
  const auth = new UnitAuthenticator(new WriterKeyring().name("v", 1, w.publicKey));
  t.true(auth.check(writerUnitSigner(w.privateKey).sign([encodeMessage(unitSpec, unit(3))]), [unit(3)])[0]!.ok);
});

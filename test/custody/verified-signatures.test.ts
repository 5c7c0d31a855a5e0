import test from "ava";
import { generateHolderKeyPair, publicKeyFromRaw, signBytes, verifyBytes } from "../../custody/signing.ts";
import { VerifiedSignatures } from "../../custody/verified-signatures.ts";

const message = (n: number) => Uint8Array.from({ length: 200 }, (_, i) => (i * 7 + n) & 0xff);

test("a remembered signature answers only for the same key and byte-for-byte the same message", (t) => {
  const a = generateHolderKeyPair();
  const b = generateHolderKeyPair();
  const ka = publicKeyFromRaw(a.publicKey);
  const kb = publicKeyFromRaw(b.publicKey);
  const msg = message(1);
  const sig = signBytes(a.privateKey, msg);
  const memo = new VerifiedSignatures(8);
  memo.add(ka, msg, sig);
  t.true(memo.has(ka, msg, sig));
  t.false(memo.has(kb, msg, sig), "another key");
  const changed = msg.slice();
  changed[199]! ^= 1;
  t.false(memo.has(ka, changed, sig), "one changed byte");
  t.false(memo.has(ka, msg.subarray(0, 199), sig), "a prefix");
  t.false(memo.has(ka, msg, signBytes(a.privateKey, message(2))), "another signature");
});

test("the memo keeps its own copy of the message: changing the caller's bytes later cannot make them pass", (t) => {
  const a = generateHolderKeyPair();
  const ka = publicKeyFromRaw(a.publicKey);
  const msg = message(3);
  const sig = signBytes(a.privateKey, msg);
  const memo = new VerifiedSignatures(8);
  memo.add(ka, msg, sig);
  msg[0]! ^= 1;
  t.false(memo.has(ka, msg, sig));
});

test("the memo is bounded: past its capacity the oldest signature is forgotten", (t) => {
  const a = generateHolderKeyPair();
  const ka = publicKeyFromRaw(a.publicKey);
  const memo = new VerifiedSignatures(2);
  const sigs = [1, 2, 3].map((n) => signBytes(a.privateKey, message(n)));
  sigs.forEach((s, i) => memo.add(ka, message(i + 1), s));
  t.is(memo.size, 2);
  t.false(memo.has(ka, message(1), sigs[0]!));
  t.true(memo.has(ka, message(3), sigs[2]!));
});

test("verifyBytes after a successful verification still rejects a changed message, another key and a changed signature", (t) => {
  const a = generateHolderKeyPair();
  const b = generateHolderKeyPair();
  const ka = publicKeyFromRaw(a.publicKey);
  const msg = message(4);
  const sig = signBytes(a.privateKey, msg);
  t.true(verifyBytes(ka, msg, sig));
  t.true(verifyBytes(ka, msg, sig), "the same triple again");
  const changed = msg.slice();
  changed[10]! ^= 0x80;
  t.false(verifyBytes(ka, changed, sig));
  t.false(verifyBytes(publicKeyFromRaw(b.publicKey), msg, sig));
  const badSig = sig.slice();
  badSig[5]! ^= 1;
  t.false(verifyBytes(ka, msg, badSig));
});

test("a key parsed twice from the same raw bytes is the same verification key, and equal bytes at another offset find it", (t) => {
  const a = generateHolderKeyPair();
  const padded = new Uint8Array(40);
  padded.set(a.publicKey, 8);
  t.is(publicKeyFromRaw(a.publicKey), publicKeyFromRaw(Uint8Array.from(a.publicKey)));
  t.is(publicKeyFromRaw(padded.subarray(8)), publicKeyFromRaw(a.publicKey));
});

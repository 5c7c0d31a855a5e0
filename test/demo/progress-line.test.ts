/**
 * The demo's live status (issue #47): one clock, one line per volume, every custody site listed in
 * the same order whatever answered, and on a terminal the block rewritten in place.
 */
import test from "ava";
import { LiveBlock } from "../../tools/demo/live-block.ts";
import { clock, formatProgress } from "../../tools/demo/progress-line.ts";

const progress = (sites: { site: string; bytes: number | null | "struck" }[]) =>
  formatProgress({
    seconds: 25.14,
    phase: "streaming",
    mbPerSec: 3.41,
    volumes: [
      { volume: "vol-demo", writes: 580, acked: 580, receiptedCut: 571 },
      { volume: "vol-direct", writes: 329, acked: 329, receiptedCut: null },
    ],
    sites,
  });

test("one heading on the demo's clock, one line per volume with its own head and what is in flight, one line of sites", (t) => {
  const lines = progress([{ site: "s-e1", bytes: 2 * 1024 * 1024 }, { site: "s-wp", bytes: null }, { site: "s-usw", bytes: "struck" }]);
  t.is(lines.length, 4);
  t.true(lines[0]!.startsWith(`  ${clock(25.14)}streaming`), lines[0]);
  t.regex(lines[1]!, /vol-demo +580 writes, acked #580, receipts protect #571 \(9 in flight\)$/);
  t.regex(lines[2]!, /vol-direct +329 writes, acked #329, receipts protect #- \(329 in flight\)$/);
  t.regex(lines[3]!, /in custody +s-e1 2\.0 MiB · s-wp … · s-usw struck$/);
  // No line mixes two volumes' figures.
  t.false(lines[1]!.includes("329"));
});

test("the sites line keeps its order and length whichever holders answered", (t) => {
  const a = progress([{ site: "s-e1", bytes: 1024 }, { site: "s-wp", bytes: 2048 }]);
  const b = progress([{ site: "s-e1", bytes: null }, { site: "s-wp", bytes: 4096 }]);
  t.deepEqual([...a[3]!.matchAll(/s-\w+/g)].map((m) => m[0]), ["s-e1", "s-wp"]);
  t.deepEqual([...b[3]!.matchAll(/s-\w+/g)].map((m) => m[0]), ["s-e1", "s-wp"]);
});

test("on a terminal the block is redrawn in place and an event line clears it first; in a pipe it is printed at most every interval", (t) => {
  let out = "";
  const tty = new LiveBlock((s) => (out += s), true);
  tty.show(["a", "b", "c"]);
  tty.show(["d", "e", "f"]);
  t.is(out, "a\x1b[K\nb\x1b[K\nc\x1b[K\n\x1b[3A\r\x1b[Jd\x1b[K\ne\x1b[K\nf\x1b[K\n");
  out = "";
  tty.print("event");
  t.is(out, "\x1b[3A\r\x1b[Jevent\n");

  let now = 0;
  let plain = "";
  const pipe = new LiveBlock((s) => (plain += s), false, () => now, 5_000);
  pipe.show(["x", "y"]);
  now = 4_999;
  pipe.show(["skipped"]);
  now = 5_000;
  pipe.show(["z"]);
  t.is(plain, "x\ny\nz\n");
});

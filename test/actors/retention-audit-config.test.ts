import test from "ava";
import { checkRetentionAuditConfig, RetentionAuditConfigError } from "../../actors/controller/retention-audits.ts";

const good = { everyMs: 1000, unitsPerChallenge: 4, answerTimeoutMs: 2000, maxBytesPerPeriod: 1 << 26, periodMs: 60_000 };

test("a retention-audit configuration with positive integers is accepted as given", (t) => {
  t.is(checkRetentionAuditConfig(good), good);
});

test("a zero, negative, fractional or missing retention-audit field is refused with a typed error naming it", (t) => {
  for (const [field, value] of [["everyMs", 0], ["unitsPerChallenge", -1], ["answerTimeoutMs", 1.5], ["periodMs", undefined], ["maxBytesPerPeriod", "64MiB"]] as const) {
    const e = t.throws(() => checkRetentionAuditConfig({ ...good, [field]: value } as never), { instanceOf: RetentionAuditConfigError });
    t.is(e?.code, "invalid_retention_audit");
    t.is((e?.detail as { field: string }).field, `retentionAudit.${field}`);
  }
});

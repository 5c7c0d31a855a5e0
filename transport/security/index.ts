// Public surface of transport/security/: who may say what on the bus, and the files that prove who is who.
export * from "./security-error.ts";
export * from "./principal-permissions.ts";
export * from "./permission-check.ts";
export * from "./server-config.ts";
export * from "./nkey-seed.ts";
export * from "./certificates.ts";
export * from "./provision.ts";

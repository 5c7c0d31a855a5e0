// Test helpers other test files may use: real NATS servers, AVA glue, the Transport conformance suite.
export * from "./nats-server.ts";
export * from "./nats-test-context.ts";
export * from "./transport-conformance.ts";
export * from "./custody-cli.ts";

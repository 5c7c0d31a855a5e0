// Public surface of transport/. Other folders import from here, never from the NATS client.
export * from "./transport.ts";
export * from "./transport-error.ts";
export * from "./nats-connection.ts";
export * from "./nats-transport.ts";
export * from "./trace-context.ts";
export * from "./subjects.ts";
export * from "./wire/index.ts";
export * from "./credit-window.ts";
export * from "./credit-sender.ts";
export * from "./credit-grantor.ts";

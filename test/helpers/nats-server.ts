// The nats-server launcher lives in the test kit (testing/), shared with the demo, benches and chaos.
export * from "../../testing/nats-server.ts";

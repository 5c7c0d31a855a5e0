/**
 * V8 flags every role process is started with (`node <flags> cli/custody.js run …`).
 *
 * `--max-semi-space-size=16`: Node 24's V8 sizes the young generation from the heap limit, and on
 * a 24 GiB machine lets it grow to 128 MB (two 64 MB semi-spaces) under steady allocation; Node 20
 * stopped at 32 MB. A long-running role then shows RSS creeping up for tens of minutes (a base
 * builder rose from 214 to 339 MB over a 30-minute soak with its heap at about 20 MB), which
 * looks like a leak to anyone watching and costs memory the roles do not use. 16 MB semi-spaces
 * are Node 20's cap, the one the benches were measured on. Measured in docs/soak.md.
 */
export const ROLE_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=16"];

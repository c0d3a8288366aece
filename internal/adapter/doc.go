// Package adapter is the local HTTP adapter of seed 000: the last hop from
// a2a-runtime to an agent host on the user's machine. It serves
//
//	GET  /health    {"ok": true, "provider": "<name>", "busy": <bool>}
//	POST /run-task  one task, answered with a reply shape of seed 000
//	POST /execute   the same, for runtimes configured with OpenClaw's path
//
// and leaves everything about the host to a provider.Provider.
//
// # Replies
//
// A task that ran answers HTTP 200 with {"success": true, "output": {...}}
// or, when the task failed, {"success": false, "error": "..."}. Requests that
// cannot become a task are refused with a failure body and a status: 400
// (not a JSON object, task_run_id missing, input not an object), 401 (bearer
// token required), 405, 413 (body over 8 MiB), 415 (not application/json),
// 429 (queue full) or 503 (shutting down). Unknown request fields are
// ignored, so this adapter keeps working when the runtime adds fields.
//
// # One task at a time
//
// Tasks run one after another (seed 001 §2.5). A request that arrives while a
// task runs waits in a first-in, first-out queue of Config.QueueSize places
// (default 4) and runs when its turn comes. When every place is taken the
// request is answered at once with 429, a failure body and Retry-After, so a
// runtime is never left hanging behind an unbounded backlog. A waiting
// request whose client goes away leaves the queue. The task timeout counts
// from the start of the run, not from the arrival.
//
// # Streaming
//
// A request whose Accept lists application/x-ndjson gets HTTP 200 with
// newline-delimited adapterapi.StreamLine values once its task starts: a
// progress line for each provider report, then exactly one result line
// holding the reply. Each line is flushed as it is written. Without that
// Accept the provider's progress is only logged at debug level.
//
// # Stopping tasks
//
// A task's context ends when its timeout expires (the reply says "timed out
// after ..."), when the client goes away (the runtime was killed or
// disconnected), and when a graceful shutdown runs out of time. Providers
// stop everything they started when that happens.
//
// # Security boundary
//
// The adapter listens on loopback only (seed 000 "Security boundary"). A
// non-loopback address needs Config.AllowRemote and Config.AuthToken; every
// request but GET /health must then carry "Authorization: Bearer <token>".
// The adapter never reads the runtime's profile, never calls the platform,
// never logs request bodies at info level and never logs the token.
package adapter

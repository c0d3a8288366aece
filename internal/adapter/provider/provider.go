// Package provider runs one task on a local agent host. A Provider is the only
// thing that knows how a given host is driven: an echo, an arbitrary command,
// or an agent host (Claude Code, Codex, Gemini CLI, Cursor Agent, Hermes,
// OpenClaw). The adapter's HTTP server knows nothing about hosts.
//
// Each provider is one file, and each host provider's file says which
// documented behaviour of its host it relies on. What several providers need
// lives beside them: the task and its directories (task.go), running a host
// process under a keeper that stops everything it started (process.go,
// package keeper), turning files a host wrote into artifact write requests
// (outputs.go), reading progress lines (progress.go), reading JSONL and
// Server-Sent Event streams (stream.go), what CLI hosts share (host.go),
// describing tool calls (describe.go), the OpenAI-compatible chat endpoint
// of HTTP hosts (chatcompletions.go), keeping secrets out of replies
// (secrets.go), remembering host sessions per conversation (sessions.go),
// and checking a host's installation (doctor.go).
package provider

import "context"

// Provider runs tasks on one kind of agent host.
type Provider interface {
	// Name identifies the provider in GET /health and in logs.
	Name() string
	// Run executes t and blocks until it is done or ctx ends. The adapter runs
	// one task at a time, so Run is never called concurrently on one
	// provider. progress may be called any number of times, from any
	// goroutine, but never after Run returns. A returned error becomes the
	// failure reply {"success": false, "error": err.Error()}, so its text is
	// written for the person who sent the task. When ctx ends, Run must stop
	// every process it started before it returns.
	Run(ctx context.Context, t *Task, progress func(Progress)) (*Result, error)
}

// Progress is an interim report of a running task. It reaches the runtime
// only when the runtime asked for a streaming reply.
type Progress struct {
	// Message is a short human-readable status.
	Message string
	// Percent, when set, is the completion estimate from 0 to 100.
	Percent *float64
}

// Result is a successful task outcome.
type Result struct {
	// Output becomes "output" of the success envelope
	// {"success": true, "output": ...}: "text" for the answer and, when the
	// host produced files, "artifacts" with adapterapi.ArtifactWrite values.
	Output map[string]any
}

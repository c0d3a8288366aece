package a2aserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// scripted is the agent host of these tests; what it does depends on the
// task text:
//
//   - "wait…": reports progress, then waits until the test opens gate (or
//     the task is stopped, which it reports on stopped);
//   - "ask…": asks a question (input required);
//   - anything with earlier turns in input.history (an answer): says what
//     it was told, and the turns it saw;
//   - "parts…": answers with what it received (attachment names and
//     contents, the data), echoes the data as structured output and
//     delivers a file;
//   - "message…": answers with the A2A message it received
//     (input.message) as a data part of output.parts, and a file by URL;
//   - "one-shot…": answers with a direct message (output.reply);
//   - "decline…": declines the task (output.rejected);
//   - anything else: echoes the text.
type scripted struct {
	gate    chan struct{}
	stopped chan string
	// started holds the run ids of the "wait" tasks the host began.
	started sync.Map
}

// waitStarted waits until the host began the "wait" task of run id: the
// run reads as working from its claim on, a moment before its host starts.
func (s *scripted) waitStarted(t *testing.T, id string) {
	t.Helper()
	meshtest.Eventually(t, 20*time.Second, func() bool { _, ok := s.started.Load(id); return ok },
		func() string { return "the host never began task " + id })
}

func newScripted() *scripted {
	return &scripted{gate: make(chan struct{}, 16), stopped: make(chan string, 16)}
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Run(ctx context.Context, t *provider.Task, progress func(provider.Progress)) (*provider.Result, error) {
	var in struct {
		Data        any                      `json:"data"`
		Message     any                      `json:"message"`
		Attachments []adapterapi.Attachment  `json:"attachments"`
		History     []adapterapi.HistoryTurn `json:"history"`
	}
	_ = json.Unmarshal(t.Request.Input, &in)
	switch {
	case strings.HasPrefix(t.Text, "wait"):
		s.started.Store(t.Request.TaskRunID, true)
		if progress != nil {
			progress(provider.Progress{Message: "thinking about " + t.Text})
		}
		select {
		case <-ctx.Done():
			s.stopped <- t.Request.TaskRunID
			return nil, ctx.Err()
		case <-s.gate:
			// With its usage, as real hosts answer: the task_run.usage event
			// it brings changes nothing an A2A client sees.
			return &provider.Result{Output: map[string]any{"text": "done: " + t.Text, "usage": map[string]any{"input_tokens": 10, "output_tokens": 2}}}, nil
		}
	case strings.HasPrefix(t.Text, "message"):
		return &provider.Result{Output: map[string]any{"text": "seen", "parts": []any{
			map[string]any{"kind": "data", "data": map[string]any{"message": in.Message}},
			map[string]any{"kind": "file", "uri": "https://files.example.com/out/summary.pdf?v=2", "name": "summary.pdf", "mime_type": "application/pdf"},
		}}}, nil
	case strings.HasPrefix(t.Text, "one-shot"):
		return &provider.Result{Output: map[string]any{"text": "the answer to " + t.Text, "reply": "message"}}, nil
	case strings.HasPrefix(t.Text, "decline"):
		return &provider.Result{Output: map[string]any{"text": "I do not book flights", "rejected": true}}, nil
	case strings.HasPrefix(t.Text, "ask"):
		return &provider.Result{Output: map[string]any{"text": "Which city?", adapterapi.InputRequiredKey: true}}, nil
	case len(in.History) > 0:
		var turns []string
		for _, h := range in.History {
			turns = append(turns, h.Role+":"+h.Text)
		}
		return &provider.Result{Output: map[string]any{"text": fmt.Sprintf("booked %s after %s", t.Text, strings.Join(turns, " | "))}}, nil
	case strings.HasPrefix(t.Text, "parts"):
		var got []string
		for _, a := range in.Attachments {
			content, _ := base64.StdEncoding.DecodeString(a.ContentBase64)
			got = append(got, fmt.Sprintf("%s(%s,%s)=%q uri=%s", a.Name, a.MimeType, sizeOf(a), content, a.URI))
		}
		sort.Strings(got)
		out := map[string]any{"text": "received " + strings.Join(got, "; ")}
		if in.Data != nil {
			out["data"] = map[string]any{"echo": in.Data}
		}
		out["artifacts"] = []map[string]any{{"filename": "report.txt", "mime_type": "text/plain", "content_text": "a report for " + t.Text}}
		return &provider.Result{Output: out}, nil
	}
	return &provider.Result{Output: map[string]any{"text": t.Text}}, nil
}

func sizeOf(a adapterapi.Attachment) string {
	if a.Size == 0 {
		return "?"
	}
	return fmt.Sprint(a.Size)
}

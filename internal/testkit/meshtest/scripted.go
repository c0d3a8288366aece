package meshtest

import (
	"context"
	"errors"
	"strings"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
)

// Scripted is an agent host for tests whose behaviour the task text picks:
//
//   - "wait…": reports progress, then waits until the test sends on Gate (or
//     the task is stopped, which it reports on Stopped);
//   - "fail…": fails with "scripted failure: <text>";
//   - "ask…": ends its turn asking "Which city?" (input required);
//   - anything else: answers its text, prefixed with Label and ": " when
//     Label is set (so a test tells which agent answered).
//
// Every task's host environment (see adapterapi.Environment) is sent on
// Environments when the channel is set, never echoed.
type Scripted struct {
	Label        string
	Gate         chan struct{}
	Stopped      chan string
	Environments chan *adapterapi.Environment
}

// NewScripted returns a scripted host with buffered channels.
func NewScripted(label string) *Scripted {
	return &Scripted{Label: label, Gate: make(chan struct{}, 16), Stopped: make(chan string, 16), Environments: make(chan *adapterapi.Environment, 16)}
}

// Name returns "scripted".
func (s *Scripted) Name() string { return "scripted" }

// Run implements provider.Provider.
func (s *Scripted) Run(ctx context.Context, t *provider.Task, progress func(provider.Progress)) (*provider.Result, error) {
	if s.Environments != nil {
		select {
		case s.Environments <- t.Request.Environment:
		default:
		}
	}
	switch {
	case strings.HasPrefix(t.Text, "wait"):
		if progress != nil {
			pct := 40.0
			progress(provider.Progress{Message: "working on " + t.Text, Percent: &pct})
		}
		select {
		case <-ctx.Done():
			s.Stopped <- t.Request.TaskRunID
			return nil, ctx.Err()
		case <-s.Gate:
		}
	case strings.HasPrefix(t.Text, "fail"):
		return nil, errors.New("scripted failure: " + t.Text)
	case strings.HasPrefix(t.Text, "ask"):
		return &provider.Result{Output: map[string]any{"text": "Which city?", adapterapi.InputRequiredKey: true}}, nil
	}
	text := t.Text
	if s.Label != "" {
		text = s.Label + ": " + text
	}
	return &provider.Result{Output: map[string]any{"text": text}}, nil
}

package provider

import "context"

// Echo answers every task with its own input text. It serves demos and
// measures the adapter's own overhead, so it does nothing but build the reply.
type Echo struct{}

// Name returns "echo".
func (Echo) Name() string { return "echo" }

// Run returns input.text as output.text.
func (Echo) Run(_ context.Context, t *Task, _ func(Progress)) (*Result, error) {
	return &Result{Output: map[string]any{"text": t.Text}}, nil
}

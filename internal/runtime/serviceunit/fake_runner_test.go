package serviceunit_test

import (
	"context"
	"strings"
	"sync"

	"github.com/a2amesh/a2amesh/internal/runtime/serviceunit"
)

// fakeRunner records commands and answers them from a script keyed by the
// command line; unscripted commands succeed silently.
type fakeRunner struct {
	mu       sync.Mutex
	commands []string
	answers  map[string]serviceunit.Result
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{answers: map[string]serviceunit.Result{}}
}

func (f *fakeRunner) answer(cmd, output string, exit int) {
	f.answers[cmd] = serviceunit.Result{Output: []byte(output), ExitCode: exit}
}

func (f *fakeRunner) Run(_ context.Context, name string, args ...string) (serviceunit.Result, error) {
	cmd := strings.Join(append([]string{name}, args...), " ")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commands = append(f.commands, cmd)
	return f.answers[cmd], nil
}

func (f *fakeRunner) issued() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.commands
	f.commands = nil
	return out
}

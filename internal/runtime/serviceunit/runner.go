package serviceunit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Runner runs a service manager command. It is an interface so tests can
// check the exact commands without a service manager.
type Runner interface {
	// Run runs name with args and waits for it. A command that ran and
	// exited non-zero is a Result with that exit code, not an error: for
	// systemctl is-active and launchctl print a non-zero exit is an answer.
	Run(ctx context.Context, name string, args ...string) (Result, error)
}

// Result is what a command printed (stdout and stderr) and its exit code.
type Result struct {
	Output   []byte
	ExitCode int
}

// ExecRunner runs commands with os/exec.
type ExecRunner struct{}

// Run implements Runner.
func (ExecRunner) Run(ctx context.Context, name string, args ...string) (Result, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return Result{Output: out, ExitCode: exit.ExitCode()}, nil
	}
	if err != nil {
		return Result{Output: out}, fmt.Errorf("run %s: %w", name, err)
	}
	return Result{Output: out}, nil
}

// run runs a command that must succeed.
func run(ctx context.Context, r Runner, name string, args ...string) error {
	res, err := r.Run(ctx, name, args...)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s %s: exit status %d: %s", name, strings.Join(args, " "), res.ExitCode, bytes.TrimSpace(res.Output))
	}
	return nil
}

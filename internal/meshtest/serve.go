package meshtest

import (
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// StartCommand starts cmd with its stdout and stderr going to logs; the
// test's cleanup kills it and waits for it to be gone.
func StartCommand(t testing.TB, cmd *exec.Cmd, logs *Logs) {
	t.Helper()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
}

// WaitReady polls GET base/readyz until it answers 200; the test fails
// after timeout, showing logs.
func WaitReady(t testing.TB, base string, timeout time.Duration, logs *Logs) {
	t.Helper()
	Eventually(t, timeout, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return base + " never became ready:\n" + logs.String() })
}

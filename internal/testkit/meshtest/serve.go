package meshtest

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
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

// WaitServices waits until each named platform service answers NATS
// service discovery with its operations registered ($SRV.INFO.<name>):
// a gateway is ready before the `serve` processes behind it are, and a
// request it sends meanwhile gets 503. The test fails after timeout,
// showing logs.
func WaitServices(t testing.TB, nc *nats.Conn, timeout time.Duration, logs *Logs, names ...string) {
	t.Helper()
	for _, name := range names {
		subject, err := micro.ControlSubject(micro.InfoVerb, name, "")
		if err != nil {
			t.Fatal(err)
		}
		Eventually(t, timeout, func() bool {
			msg, err := nc.Request(subject, nil, time.Second)
			if err != nil {
				return false
			}
			var info micro.Info
			return json.Unmarshal(msg.Data, &info) == nil && len(info.Endpoints) > 0
		}, func() string { return "service " + name + " never answered on the bus:\n" + logs.String() })
	}
}

package e2e

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// Seed 000 "Failed Response" and "Successful Response": every way an adapter
// can answer decides the run's end. One adapter written here answers each
// task by its input text; the runtime allows each call one second.
func TestAdapterReply_EachShapeEndsTheRunAsTheContractSays(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	answer := func(status int, contentType, body string) func(context.Context, http.ResponseWriter) {
		return func(_ context.Context, w http.ResponseWriter) {
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
		}
	}
	const js = "application/json"
	cases := []struct {
		name   string
		reply  func(context.Context, http.ResponseWriter)
		status mesh.Status
		code   string // error code of a failed run
		output string // JSON output of a completed run
	}{
		{"non-2xx fails with ADAPTER_HTTP_ERROR", answer(http.StatusInternalServerError, js, `{"error":"boom"}`), mesh.StatusFailed, "ADAPTER_HTTP_ERROR", ""},
		{"non-JSON fails with ADAPTER_INVALID_JSON", answer(http.StatusOK, "text/plain", "all done!"), mesh.StatusFailed, "ADAPTER_INVALID_JSON", ""},
		{"JSON array fails with ADAPTER_INVALID_RESPONSE", answer(http.StatusOK, js, `[{"text":"x"}]`), mesh.StatusFailed, "ADAPTER_INVALID_RESPONSE", ""},
		{"JSON number fails with ADAPTER_INVALID_RESPONSE", answer(http.StatusOK, js, `42`), mesh.StatusFailed, "ADAPTER_INVALID_RESPONSE", ""},
		{"hanging adapter fails with ADAPTER_TIMEOUT", func(ctx context.Context, _ http.ResponseWriter) { <-ctx.Done() }, mesh.StatusFailed, "ADAPTER_TIMEOUT", ""},
		{"explicit failure fails with its reason", answer(http.StatusOK, js, `{"success":false,"error":"cannot"}`), mesh.StatusFailed, "ADAPTER_REPORTED_FAILURE", ""},
		{"legacy direct output completes with the whole object", answer(http.StatusOK, js, `{"text":"x","meta":{"tokens":3}}`), mesh.StatusCompleted, "", `{"meta":{"tokens":3},"text":"x"}`},
		{"success envelope completes with its output", answer(http.StatusOK, js, `{"success":true,"output":{"text":"y"}}`), mesh.StatusCompleted, "", `{"text":"y"}`},
	}
	replies := map[string]func(context.Context, http.ResponseWriter){}
	for _, tc := range cases {
		replies[tc.name] = tc.reply
	}
	fa := newFakeAdapter(t, func(ctx context.Context, w http.ResponseWriter, task map[string]any) {
		input, _ := task["input"].(map[string]any)
		replies[input["text"].(string)](ctx, w)
	})
	c := l.connect(p, fa.Endpoint, "--task-timeout", "1s", "--concurrency", "4")

	runs := map[string]string{}
	t.Run("shapes", func(t *testing.T) {
		for _, tc := range cases {
			run := c.task(tc.name)
			runs[tc.name] = run.ID
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				ended := waitEnded(t, p.forTest(t), run.ID, tc.status, waitStart)
				if tc.status == mesh.StatusFailed {
					wantError(t, ended, tc.code, "")
					if out := outputOf(t, ended); out["error"] == nil || out["error"] == "" {
						t.Errorf("failed output %s has no error", ended.Output)
					}
					return
				}
				if got := meshtest.JSON(outputOf(t, ended)); got != tc.output {
					t.Errorf("output %s, want %s", got, tc.output)
				}
			})
		}
	})
	hung := runs["hanging adapter fails with ADAPTER_TIMEOUT"]
	meshtest.Eventually(t, waitStart, func() bool { return fa.wasAborted(hung) },
		func() string { return "the runtime never dropped the request that timed out" })
}

// Seed 000: an adapter that cannot be reached fails the run with
// ADAPTER_UNREACHABLE, once the runtime stopped waiting for it to come back
// (--adapter-wait) and gave the run back a few times.
func TestAdapterReply_NoAdapterFailsRunWithAdapterUnreachable(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	c := l.connect(p, "http://"+meshtest.FreeAddr(t)+"/run-task", "--adapter-wait", "1s")
	run := waitEnded(t, p.Platform, c.task("anyone there?").ID, mesh.StatusFailed, waitStart)
	wantError(t, run, "ADAPTER_UNREACHABLE", "connection refused")
}

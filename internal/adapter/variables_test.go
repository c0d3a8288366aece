package adapter

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
)

// An adapter the runtime started (it has a per-start token, which the
// runtime's request carries) takes a task's variables, as the runtime
// opened them from the platform's sealed box, and hands them to the host;
// names a host is never given are refused even then, by name and without
// quoting a value.
func TestRunTask_TakesVariablesFromItsRuntimeOnly(t *testing.T) {
	const token = "adapter-start-token-5c1e"
	got := make(chan map[string]string, 8)
	_, ts := startServer(t, Config{AuthToken: token, Provider: funcProvider(func(_ context.Context, task *provider.Task) (*provider.Result, error) {
		got <- task.Request.Environment.Variables
		return &provider.Result{Output: map[string]any{"text": "ran"}}, nil
	})})
	body := func(vars string) string {
		return `{"task_run_id":"r","conversation_id":"c","input":{"text":"x"},"environment":{"variables":` + vars + `}}`
	}
	auth := []string{"Authorization", "Bearer " + token}

	if reply := parseReply(t, post(t.Context(), ts.URL, body(`{"API_TOKEN":"value-81f0"}`), auth...)); reply.Kind != adapterapi.KindSuccess {
		t.Fatalf("reply %+v, want success", reply)
	}
	if vars := receive(t, got, "the task"); vars["API_TOKEN"] != "value-81f0" || len(vars) != 1 {
		t.Fatalf("the host got the variables %d, want API_TOKEN alone", len(vars))
	}

	status, msg := failureOf(t, post(t.Context(), ts.URL, body(`{"LD_PRELOAD":"/tmp/evil.so","API_TOKEN":"value-81f0"}`), auth...))
	if status != http.StatusBadRequest || !strings.Contains(msg, "LD_PRELOAD") || strings.Contains(msg, "evil") || strings.Contains(msg, "value-81f0") {
		t.Fatalf("forbidden name: %d %q, want 400 naming LD_PRELOAD and quoting no value", status, msg)
	}
	select {
	case <-got:
		t.Fatal("the task with LD_PRELOAD ran")
	default:
	}
}

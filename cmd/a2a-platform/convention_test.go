package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/cliusage/cliusagetest"
	"github.com/spf13/cobra"
)

// Every flag of every command of a2a-platform has its A2A_MESH_ variable.
func TestCLI_EveryFlagOfEveryCommandHasItsVariable(t *testing.T) {
	if n := cliusagetest.EveryFlagHasItsVariable(t, newRoot()); n < 60 {
		t.Errorf("checked %d flags: the walk missed commands", n)
	}
}

// Every listing command prints JSON with -o json: against an API that
// answers every GET with a list, each prints a JSON document.
func TestCLI_EveryListingCommandPrintsJSON(t *testing.T) {
	t.Setenv("A2A_MESH_OWNER_TOKEN", "owner-secret")
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items": [{"id": "one", "created_at": "2026-11-28T17:05:03.123456789Z"}]}`))
	}))
	defer api.Close()
	listings := cliusagetest.Listings(newRoot())
	want := []string{"agents list", "agents runtimes", "tasks list", "consumers list", "webhooks list", "webhooks deliveries", "context list", "usage"}
	var paths []string
	for _, c := range listings {
		paths = append(paths, strings.TrimPrefix(c.CommandPath(), "a2a-platform "))
	}
	for _, w := range want {
		if !strings.Contains(strings.Join(paths, ","), w) {
			t.Errorf("%s is not found as a listing command among %q", w, paths)
		}
	}
	for _, path := range paths {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&bytes.Buffer{})
		args := append(strings.Fields(path), placeholders(root, path)...)
		root.SetArgs(append(args, "--api-base", api.URL, "--data-dir", t.TempDir(), "-o", "json"))
		if err := root.Execute(); err != nil {
			t.Errorf("%s -o json: %v", path, err)
			continue
		}
		if !json.Valid(out.Bytes()) || !strings.HasPrefix(strings.TrimSpace(out.String()), "{") {
			t.Errorf("%s -o json printed no JSON document: %q", path, out.String())
		}
	}
}

// placeholders are values for the arguments a command's use line names.
func placeholders(root *cobra.Command, path string) []string {
	c, _, _ := root.Find(strings.Fields(path))
	n := len(regexp.MustCompile(`<[^>]+>`).FindAllString(c.Use, -1))
	return strings.Fields(strings.Repeat("x ", n))
}

// Tables print times short and local: how long ago for today, the date
// and time to the second otherwise; never RFC 3339 nanoseconds.
func TestCLI_TablesPrintShortLocalTimes(t *testing.T) {
	now := time.Date(2026, 11, 28, 17, 5, 3, 0, time.Local)
	for _, c := range []struct {
		at   time.Time
		want string
	}{
		{now.Add(-5 * time.Minute), "5m ago"},
		{now.Add(-3*time.Hour - 10*time.Minute), "3h ago"},
		{now.Add(-42 * time.Second), "42s ago"},
		{now.Add(4 * time.Minute), "in 4m"},
		{now, "now"},
		{now.AddDate(0, 0, -1), "2026-11-27 17:05:03"},
	} {
		if got := shortTime(c.at, now); got != c.want {
			t.Errorf("shortTime(%s) = %q, want %q", c.at, got, c.want)
		}
	}
	var out bytes.Buffer
	created := now.AddDate(0, -1, 0).UTC().Format(time.RFC3339Nano)
	doc := map[string]any{"agents": []any{map[string]any{"agent_id": "a1", "created_at": created}}}
	if err := printTable(&out, doc, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "2026-10-28 17:05:03") || strings.Contains(out.String(), created) {
		t.Errorf("the table does not show the short local time:\n%s", out.String())
	}
}

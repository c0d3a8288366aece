package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/cliusage/cliusagetest"
)

// runPlatform runs a2a-platform with args and returns what it printed.
func runPlatform(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// Every listing command takes --fields: each item of its output holds only
// those fields, in json, jsonl and table alike; a field no item has is a
// wrong command line (exit 2) naming the fields there are.
func TestCLI_EveryListingCommandSelectsFields(t *testing.T) {
	t.Setenv("A2A_MESH_OWNER_TOKEN", "owner-secret")
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"items": [{"id": "one", "name": "first", "state": "ok"}, {"id": "two", "name": "second", "state": "ok"}], "next_cursor": "c2"}`))
	}))
	defer api.Close()
	dataDir := t.TempDir()
	if _, err := runPlatform(t, "context", "add", "lab", "--api-base", api.URL, "--data-dir", dataDir); err != nil {
		t.Fatal(err)
	}
	for _, c := range cliusagetest.Listings(newRoot()) {
		path := strings.TrimPrefix(c.CommandPath(), "a2a-platform ")
		t.Run(path, func(t *testing.T) {
			args := append(append(strings.Fields(path), placeholders(newRoot(), path)...), "--api-base", api.URL, "--data-dir", dataDir)
			all, err := runPlatform(t, append(args, "-o", "jsonl")...)
			if err != nil {
				t.Fatal(err)
			}
			items := decodeLines(t, all)
			if len(items) == 0 {
				t.Fatalf("-o jsonl printed no item: %q", all)
			}
			keys := make([]string, 0, len(items[0]))
			for k := range items[0] {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			pick := []string{keys[len(keys)-1], keys[0]}

			out, err := runPlatform(t, append(args, "-o", "jsonl", "--fields", strings.Join(pick, ","))...)
			if err != nil {
				t.Fatal(err)
			}
			selected := decodeLines(t, out)
			if len(selected) != len(items) {
				t.Fatalf("--fields printed %d items, want %d: %q", len(selected), len(items), out)
			}
			for i, it := range selected {
				if len(it) != len(pick) || it[pick[0]] != items[i][pick[0]] || it[pick[1]] != items[i][pick[1]] {
					t.Errorf("item %d with --fields %v: %v, from %v", i, pick, it, items[i])
				}
			}

			out, err = runPlatform(t, append(args, "-o", "json", "--fields", pick[0])...)
			var doc map[string]any
			if err != nil || json.Unmarshal([]byte(out), &doc) != nil {
				t.Fatalf("-o json --fields: %v %q", err, out)
			}
			list, _ := listOf(doc)
			for _, it := range list {
				if m, _ := it.(map[string]any); len(m) != 1 {
					t.Errorf("-o json --fields %s: item %v", pick[0], it)
				}
			}

			out, err = runPlatform(t, append(args, "-o", "table", "--fields", strings.Join(pick, ","))...)
			if header := strings.Fields(strings.SplitN(out, "\n", 2)[0]); err != nil || strings.Join(header, ",") != strings.ToUpper(strings.Join(pick, ",")) {
				t.Errorf("-o table --fields %v: %v, header %q", pick, err, header)
			}

			_, err = runPlatform(t, append(args, "--fields", "no_such_field")...)
			if cliusage.ExitCode(err) != cliusage.ExitUsage || !strings.Contains(err.Error(), pick[0]) {
				t.Errorf("--fields no_such_field: %v (exit %d), want exit %d naming the fields there are", err, cliusage.ExitCode(err), cliusage.ExitUsage)
			}
		})
	}
}

func decodeLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var items []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		items = append(items, m)
	}
	return items
}

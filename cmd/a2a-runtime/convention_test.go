package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/cliusage/cliusagetest"
	"github.com/a2amesh/a2amesh/internal/profile"
)

// Every flag of every command of a2a-runtime has its A2A_MESH_ variable.
func TestCLI_EveryFlagOfEveryCommandHasItsVariable(t *testing.T) {
	if n := cliusagetest.EveryFlagHasItsVariable(t, newRoot()); n < 40 {
		t.Errorf("checked %d flags: the walk missed commands", n)
	}
}

// Every listing command prints JSON with -o json (profiles list: each
// profile with its state, never its credential).
func TestCLI_EveryListingCommandPrintsJSON(t *testing.T) {
	config := filepath.Join(t.TempDir(), "runtime.json")
	p := profile.Profile{AgentID: "agent-1", RuntimeID: "runtime-1", APIBase: "http://127.0.0.1:1", RuntimeToken: "runtime-secret"}
	if err := profile.NewStore(config).Put(p); err != nil {
		t.Fatal(err)
	}
	listings := cliusagetest.Listings(newRoot())
	if len(listings) == 0 {
		t.Fatal("no listing command found")
	}
	for _, c := range listings {
		path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "a2a-runtime "))
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(append(path, "--config", config, "--offline", "-o", "json"))
		if err := root.Execute(); err != nil {
			t.Fatalf("%s -o json: %v", c.CommandPath(), err)
		}
		var doc map[string][]map[string]any
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatalf("%s -o json printed %v: %q", c.CommandPath(), err, out.String())
		}
		if strings.Contains(out.String(), "runtime-secret") {
			t.Errorf("%s -o json shows the credential", c.CommandPath())
		}
		if rows := doc["profiles"]; len(rows) != 1 || rows[0]["name"] != p.Name() || rows[0]["active"] != true {
			t.Errorf("%s -o json: %s", c.CommandPath(), out.String())
		}
	}
}

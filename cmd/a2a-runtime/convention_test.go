package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/cliusage"
	"github.com/a2amesh/a2amesh/internal/cliusage/cliusagetest"
	"github.com/a2amesh/a2amesh/internal/runtime/profile"
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

// Every listing command takes --fields: only those fields of each item, in
// json, jsonl and table alike; a field no item has is a wrong command line.
func TestCLI_EveryListingCommandSelectsFields(t *testing.T) {
	config := filepath.Join(t.TempDir(), "runtime.json")
	p := profile.Profile{AgentID: "agent-1", RuntimeID: "runtime-1", APIBase: "http://127.0.0.1:1", RuntimeToken: "runtime-secret"}
	if err := profile.NewStore(config).Put(p); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&bytes.Buffer{})
		root.SetArgs(args)
		err := root.Execute()
		return out.String(), err
	}
	for _, c := range cliusagetest.Listings(newRoot()) {
		path := strings.Fields(strings.TrimPrefix(c.CommandPath(), "a2a-runtime "))
		args := append(path, "--config", config, "--offline")
		out, err := run(append(args, "-o", "jsonl", "--fields", "name,active")...)
		if err != nil || strings.TrimSpace(out) != `{"active":true,"name":"`+p.Name()+`"}` {
			t.Errorf("%s -o jsonl --fields name,active: %v %q", c.CommandPath(), err, out)
		}
		out, err = run(append(args, "-o", "json", "--fields", "agent_id")...)
		if err != nil || !json.Valid([]byte(out)) || strings.Contains(out, "runtime_id") || !strings.Contains(out, `"agent_id": "agent-1"`) {
			t.Errorf("%s -o json --fields agent_id: %v %q", c.CommandPath(), err, out)
		}
		out, err = run(append(args, "--fields", "agent_id,state")...)
		if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 2 ||
			strings.Join(strings.Fields(lines[0]), " ") != "AGENT_ID STATE" || strings.Fields(lines[1])[0] != "agent-1" {
			t.Errorf("%s --fields agent_id,state: %v %q", c.CommandPath(), err, out)
		}
		_, err = run(append(args, "--fields", "token")...)
		if cliusage.ExitCode(err) != cliusage.ExitUsage || !strings.Contains(err.Error(), "agent_id") {
			t.Errorf("%s --fields token: %v, want exit 2 naming the fields there are", c.CommandPath(), err)
		}
	}
}

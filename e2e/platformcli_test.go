package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

// admin runs an a2a-platform admin verb against p as its owner.
func (p *platform) admin(args ...string) result {
	p.l.t.Helper()
	args = append(args, "--api-base", p.APIBase, "--owner-token-file", filepath.Join(p.dataDir, "owner.token"), "-o", "json")
	return p.l.run("a2a-platform "+args[0], nil, bins.Platform, args...)
}

// A second agent with a name already taken is refused with exit 1, naming
// the agent that has it and the flag that creates it anyway; nothing is
// created. With that flag it is created.
func TestPlatformCLI_AgentsCreateRefusesANameAlreadyTaken(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	first := p.admin("agents", "create", "--name", "helper")
	if first.code != 0 {
		t.Fatalf("agents create: %s", first)
	}
	var agent mesh.Agent
	if err := json.Unmarshal([]byte(first.stdout), &agent); err != nil || agent.ID == "" {
		t.Fatalf("agents create printed %v: %s", err, first)
	}

	again := p.admin("agents", "create", "--name", "helper")
	if again.code != 1 {
		t.Errorf("a second agents create --name helper exited %d, want 1: %s", again.code, again)
	}
	for _, want := range []string{`"helper"`, agent.ID, "--allow-duplicate-name"} {
		if !strings.Contains(again.stderr, want) {
			t.Errorf("the refusal does not say %q: %s", want, again)
		}
	}
	count := func() int {
		var list struct {
			Agents []mesh.Agent `json:"agents"`
		}
		res := p.admin("agents", "list")
		if err := json.Unmarshal([]byte(res.stdout), &list); err != nil {
			t.Fatalf("agents list: %v: %s", err, res)
		}
		n := 0
		for _, a := range list.Agents {
			if a.Name == "helper" {
				n++
			}
		}
		return n
	}
	if n := count(); n != 1 {
		t.Errorf("%d agents named helper after the refusal, want 1", n)
	}
	if res := p.admin("agents", "create", "--name", "helper", "--allow-duplicate-name"); res.code != 0 {
		t.Errorf("agents create --allow-duplicate-name: %s", res)
	}
	if n := count(); n != 2 {
		t.Errorf("%d agents named helper after --allow-duplicate-name, want 2", n)
	}
}

// consumers create filters with --agent and --type, as webhooks create
// and events tail do; the older --filter-agent and --filter-type still
// work, hidden from the help.
func TestPlatformCLI_ConsumersCreateFiltersWithAgentAndTypeLikeWebhooksAndEvents(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	p := l.startPlatform(platformOptions{})
	agent := p.CreateAgent("watched")
	for _, flags := range [][]string{{"--agent", agent.ID, "--type", "task_run.completed"}, {"--filter-agent", agent.ID, "--filter-type", "task_run.completed"}} {
		res := p.admin(append([]string{"consumers", "create", "--name", "c"}, flags...)...)
		if res.code != 0 {
			t.Errorf("consumers create %v: %s", flags, res)
			continue
		}
		var c struct {
			AgentID string   `json:"agent_id"`
			Types   []string `json:"types"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &c); err != nil {
			t.Fatalf("consumers create printed %v", err)
		}
		if c.AgentID != agent.ID || len(c.Types) != 1 || !strings.HasSuffix(c.Types[0], ".task_run.completed") {
			t.Errorf("consumers create %v made a credential for agent %q, types %q", flags, c.AgentID, c.Types)
		}
	}
	help := l.run("a2a-platform consumers create --help", nil, bins.Platform, "consumers", "create", "--help")
	if !strings.Contains(help.stdout, "--agent") || !strings.Contains(help.stdout, "--type") || strings.Contains(help.stdout, "--filter-") {
		t.Errorf("consumers create --help should show --agent and --type and hide --filter-*:\n%s", help.stdout)
	}
}

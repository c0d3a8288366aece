package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestUpgrade_ADeploymentOfAnEarlierLayoutServesOnceUpgraded: east (the
// origin) and west keep their global records as an earlier version did
// (in east, mirrored to west), with an agent homed in west. `a2a-platform
// upgrade` says what it moves, and a second run that nothing is left; the
// services then start in both regions, the agent is read and changed
// through either region's gateway, an API key of it is made in west, and
// with east down west still changes it: west owns it now.
func TestUpgrade_ADeploymentOfAnEarlierLayoutServesOnceUpgraded(t *testing.T) {
	sc := superclusterOf(t, "east", "west")
	earlier := sc.EarlierLayout(t, "east")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	agents, err := earlier.KeyValue(ctx, bus.BucketAgents)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	agent := mesh.Agent{ID: mesh.NewID(), Name: "kept since before", HomeRegion: "west", CreatedAt: now, UpdatedAt: now}
	data, _ := json.Marshal(agent)
	if _, err := agents.Put(ctx, agent.ID, data); err != nil {
		t.Fatal(err)
	}

	upgrade := func() string {
		t.Helper()
		cmd := exec.Command(bins.Platform, "upgrade", "--nats-url", sc.URLs("west"))
		cmd.Env = append(os.Environ(), "A2A_MESH_NATS_PASSWORD="+sc.Password())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("a2a-platform upgrade: %v\n%s", err, out)
		}
		if strings.Contains(string(out), sc.Password()) {
			t.Fatal("a2a-platform upgrade printed the service password")
		}
		return string(out)
	}
	first := upgrade()
	t.Logf("a2a-platform upgrade:\n%s", first)
	for _, want := range []string{"mesh_agents: copied 1 records to region west", "upgraded"} {
		if !strings.Contains(first, want) {
			t.Fatalf("a2a-platform upgrade said %q; want %q among its steps", first, want)
		}
	}
	if again := upgrade(); !strings.Contains(again, "nothing to upgrade") {
		t.Fatalf("a second a2a-platform upgrade said %q; want nothing to upgrade", again)
	}

	d := startServicesOn(t, sc, "east", "west")
	west, east := d.regions["west"].p, d.regions["east"].p
	var got mesh.Agent
	west.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).
		Expect(t, http.StatusOK).Decode(t, &got)
	if got.Name != agent.Name || got.HomeRegion != "west" {
		t.Fatalf("the agent, read in west once upgraded: %+v", got)
	}
	rename := func(p *meshtest.Platform, name string) {
		t.Helper()
		p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + agent.ID, Owner: true,
			JSON: map[string]any{"name": name}}).Expect(t, http.StatusOK)
	}
	named := func(p *meshtest.Platform, name string) {
		t.Helper()
		meshtest.Eventually(t, 90*time.Second, func() bool {
			p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + agent.ID, Owner: true}).
				Expect(t, http.StatusOK).Decode(t, &got)
			return got.Name == name
		}, func() string { return "the agent is named " + got.Name + ", want " + name })
	}
	rename(east, "renamed in east")
	named(west, "renamed in east")
	rename(west, "renamed in west")
	named(east, "renamed in west")
	var key struct {
		APIKey string `json:"api_key"`
	}
	west.Do(http.MethodPost, "/a2a/"+agent.ID+"/api-keys", map[string]any{"name": "after the upgrade"}, &key)
	d.procs.Secret(key.APIKey)

	d.sc.Stop("east")
	rename(west, "renamed with east down")
	named(west, "renamed with east down")
}

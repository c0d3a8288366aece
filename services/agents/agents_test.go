package agents_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

func TestCreate_ValidatesFields(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	skill := func(id, name string) map[string]any { return map[string]any{"id": id, "name": name} }
	cases := []struct {
		name string
		body map[string]any
	}{
		{"no name", map[string]any{"description": "x"}},
		{"blank name", map[string]any{"name": "   "}},
		{"long name", map[string]any{"name": strings.Repeat("n", 201)}},
		{"long description", map[string]any{"name": "a", "description": strings.Repeat("d", 4001)}},
		{"long instructions", map[string]any{"name": "a", "instructions": strings.Repeat("i", 64<<10+1)}},
		{"skill without name", map[string]any{"name": "a", "skills": []any{map[string]any{"id": "s"}}}},
		{"duplicate skill", map[string]any{"name": "a", "skills": []any{skill("s", "one"), skill("s", "two")}}},
		{"unknown field", map[string]any{"name": "a", "nmae": "typo"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: tc.body}).
				ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
		})
	}
	var list struct{ Agents []mesh.Agent }
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Agents) != 0 {
		t.Fatalf("rejected creates left %d agents", len(list.Agents))
	}
}

func TestCreateUpdateGetList_AgentAccount(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	events := p.StreamEvents(t, url.Values{"type": {"agent.created,agent.updated"}})
	defer events.Close()
	var a mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts", Owner: true, JSON: map[string]any{
		"name": " analyst ", "description": "reads reports", "instructions": "be brief",
		"skills": []any{map[string]any{"id": "summarise", "name": "Summarise", "tags": []string{"text"}}},
	}}).Expect(t, http.StatusCreated).Decode(t, &a)
	if a.Name != "analyst" || a.Instructions != "be brief" || len(a.Skills) != 1 || !mesh.ValidID(a.ID) {
		t.Fatalf("created agent %+v", a)
	}
	// Listed right away, in creation order.
	b := p.CreateAgent("second")
	var list struct{ Agents []mesh.Agent }
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts", Owner: true}).Expect(t, http.StatusOK).Decode(t, &list)
	if len(list.Agents) != 2 || list.Agents[0].ID != a.ID || list.Agents[1].ID != b.ID {
		t.Fatalf("list %+v", list.Agents)
	}
	// A partial update changes only what it names.
	var u mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + a.ID, Owner: true, JSON: map[string]any{"instructions": "be thorough"}}).
		Expect(t, http.StatusOK).Decode(t, &u)
	if u.Instructions != "be thorough" || u.Name != "analyst" || u.Description != "reads reports" || !u.UpdatedAt.After(a.UpdatedAt) || u.Revision <= a.Revision {
		t.Fatalf("updated agent %+v", u)
	}
	var got mesh.Agent
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + a.ID, Owner: true}).Expect(t, http.StatusOK).Decode(t, &got)
	if got.Instructions != "be thorough" {
		t.Fatalf("get after update %+v", got)
	}
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/" + a.ID, Owner: true, JSON: map[string]any{"name": ""}}).
		ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/agent-accounts/" + mesh.NewID(), Owner: true}).ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)
	p.Send(t, meshtest.Request{Method: http.MethodPatch, Path: "/agent-accounts/not-an-id", Owner: true, JSON: map[string]any{"name": "x"}}).
		ExpectError(t, http.StatusNotFound, mesh.CodeNotFound)

	seen := events.Until(t, 10*time.Second, meshtest.TypeIs(mesh.EventAgentUpdated, a.ID))
	want := []string{mesh.EventAgentCreated, mesh.EventAgentCreated, mesh.EventAgentUpdated}
	if len(seen) != len(want) {
		t.Fatalf("events %d, want %d", len(seen), len(want))
	}
	for i, ev := range seen {
		if ev.Type != want[i] {
			t.Fatalf("event %d is %s, want %s", i, ev.Type, want[i])
		}
	}
}

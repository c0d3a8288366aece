package a2aserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/a2aserver"
)

// TestCard_PublicCacheableAndDescribesTheAgent: the card is served to
// anyone at both paths, cacheable with an ETag, from the agent account
// (name, description, skills), with capabilities, security schemes and an
// interface for each binding and version at the agent's absolute URL, in a
// form both 0.3 and 1.0 clients read.
func TestCard_PublicCacheableAndDescribesTheAgent(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Name: "Travel agent", Skills: []mesh.Skill{
		{ID: "book", Name: "Book a table", Description: "Books restaurants", Tags: []string{"food"}, Examples: []string{"a table for 2"}, InputModes: []string{"text/plain"}},
	}}})
	base := "/a2a/" + d.agent.Agent.ID
	well := d.do(raw{method: http.MethodGet, path: base + "/.well-known/agent-card.json"})
	alias := d.do(raw{method: http.MethodGet, path: base + "/agent-card"})
	if well.status != 200 || alias.status != 200 || string(well.body) != string(alias.body) {
		t.Fatalf("card: %d / %d", well.status, alias.status)
	}
	etag := well.header.Get("ETag")
	if well.header.Get("Cache-Control") != "public, max-age=60" || !strings.HasPrefix(etag, `"`) || well.header.Get("Content-Type") != "application/json" {
		t.Errorf("card headers: %v", well.header)
	}
	if a := d.do(raw{method: http.MethodGet, path: base + "/agent-card", header: map[string]string{"If-None-Match": etag}}); a.status != http.StatusNotModified || len(a.body) != 0 {
		t.Errorf("revalidation: %d %q", a.status, a.body)
	}
	card := well.json(t)
	caps := card["capabilities"].(map[string]any)
	skills := card["skills"].([]any)
	skill := skills[0].(map[string]any)
	if card["name"] != "Travel agent" || card["version"] == "" || caps["streaming"] != true || caps["pushNotifications"] != true ||
		caps["extendedAgentCard"] != true || len(skills) != 1 || skill["id"] != "book" || skill["examples"].([]any)[0] != "a table for 2" {
		t.Errorf("card content: %s", well.body)
	}
	// 0.3 fields and 1.0 interfaces, all at the agent's absolute URL.
	if card["url"] != d.url || card["protocolVersion"] != "0.3" || card["preferredTransport"] != "JSONRPC" {
		t.Errorf("0.3 fields: url %v version %v transport %v", card["url"], card["protocolVersion"], card["preferredTransport"])
	}
	var ifaces []string
	for _, i := range card["supportedInterfaces"].([]any) {
		m := i.(map[string]any)
		if m["url"] != d.url {
			t.Errorf("interface url %v", m["url"])
		}
		ifaces = append(ifaces, m["protocolBinding"].(string)+"/"+m["protocolVersion"].(string))
	}
	if strings.Join(ifaces, " ") != "JSONRPC/1.0 HTTP+JSON/1.0 JSONRPC/0.3 HTTP+JSON/0.3" {
		t.Errorf("interfaces %v", ifaces)
	}
	schemes := card["securitySchemes"].(map[string]any)
	if schemes["apiKey"].(map[string]any)["name"] != "X-API-Key" || schemes["bearer"].(map[string]any)["scheme"] != "Bearer" {
		t.Errorf("security schemes %v", schemes)
	}

	// Editing the account's skills changes the card and its ETag.
	d.p.Do(http.MethodPatch, "/agent-accounts/"+d.agent.Agent.ID, map[string]any{"skills": []map[string]any{{"id": "fly", "name": "Book a flight"}}}, nil)
	meshtest.Eventually(t, 5*time.Second, func() bool {
		a := d.do(raw{method: http.MethodGet, path: base + "/agent-card"})
		return a.header.Get("ETag") != etag && strings.Contains(string(a.body), `"fly"`)
	}, func() string { return "the card did not follow the account" })

	// The extended card, for a caller with a credential: with the runtime's
	// presence, in both versions.
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ext, err := c.GetExtendedAgentCard(ctx, &a2a.GetExtendedAgentCardRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var presence map[string]any
	for _, e := range ext.Capabilities.Extensions {
		if e.URI == a2aserver.PresenceExtension {
			presence = e.Params
		}
	}
	if presence["status"] != "online" || presence["host_label"] != "Custom Agent" {
		t.Errorf("presence %v", presence)
	}
	for version, method := range map[string]string{"0.3": "agent/getAuthenticatedExtendedCard", "1.0": "GetExtendedAgentCard"} {
		res := d.rpc(version, method, nil).json(t)
		if r, _ := res["result"].(map[string]any); r == nil || !strings.Contains(meshtest.JSON(r), a2aserver.PresenceExtension) {
			t.Errorf("%s extended card: %v", version, res)
		}
	}
	if a := d.do(raw{method: http.MethodGet, path: base + "/extendedAgentCard", header: map[string]string{"A2A-Version": "1.0"}}); a.status != 401 {
		t.Errorf("extended card without a credential: %d", a.status)
	}
	if a := d.do(raw{method: http.MethodGet, path: "/a2a/" + mesh.NewID() + "/agent-card"}); a.status != 404 {
		t.Errorf("card of an unknown agent: %d", a.status)
	}
}

// TestRateLimit_PerCallerPerAgent: a caller over its limit gets 429 with
// Retry-After on REST and the rate-limit error on JSON-RPC; another caller
// is not affected; every task accepted before the limit runs.
func TestRateLimit_PerCallerPerAgent(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) { c.A2ARateLimitPerMinute = 3 }})
	base := "/a2a/" + d.agent.Agent.ID
	var accepted []string
	for i := 0; i < 3; i++ {
		res := d.rpc("1.0", "SendMessage", map[string]any{"message": map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "counted"}}},
			"configuration": map[string]any{"returnImmediately": true}}).json(t)
		r, _ := res["result"].(map[string]any)
		if r == nil {
			t.Fatalf("request %d refused: %v", i+1, res)
		}
		accepted = append(accepted, r["task"].(map[string]any)["id"].(string))
	}
	over := d.rpc("1.0", "GetTask", map[string]any{"id": accepted[0]})
	checkRPCError(t, "JSON-RPC over the limit", "1.0", over, -31429, "RATE_LIMIT_EXCEEDED")
	if over.header.Get("Retry-After") == "" {
		t.Error("JSON-RPC refusal without Retry-After")
	}
	rest := d.do(raw{method: http.MethodGet, path: base + "/tasks/" + accepted[0], header: map[string]string{"A2A-Version": "1.0", "X-API-Key": d.key}})
	if rest.status != http.StatusTooManyRequests || rest.header.Get("Retry-After") == "" || !strings.Contains(string(rest.body), "RATE_LIMIT_EXCEEDED") {
		t.Errorf("REST over the limit: %d %v %s", rest.status, rest.header, rest.body)
	}
	if a := d.do(raw{method: http.MethodGet, path: base + "/tasks/" + accepted[0], header: map[string]string{"A2A-Version": "1.0", "X-API-Key": d.newKey(nil)}}); a.status != 404 {
		t.Errorf("another caller: %d (its own limit, and the task is not its)", a.status)
	}
	for _, id := range accepted {
		d.p.WaitTask(id, 20*time.Second, meshtest.StatusIs(mesh.StatusCompleted))
	}
}

// TestCard_PublicAgentDeclaresWhatNeedsACredential: a public agent's card
// makes security optional the way the security requirements of A2A (OpenAPI's)
// allow, with an empty requirement next to the two schemes, and its schemes
// say which operations need them: the extended card, canceling and push
// notification configurations, which answer an anonymous caller with the
// authentication error. A private agent's card has no anonymous alternative.
// The official clients of both versions read both cards.
func TestCard_PublicAgentDeclaresWhatNeedsACredential(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{agent: meshtest.AgentOptions{Provider: newScripted()}})
	private := d.do(raw{method: http.MethodGet, path: "/a2a/" + d.agent.Agent.ID + "/agent-card"}).json(t)
	if anonymousAlternative(private) || len(asList(private["security"])) != 2 || len(asList(private["securityRequirements"])) != 2 {
		t.Errorf("private card: security %v, securityRequirements %v", private["security"], private["securityRequirements"])
	}
	// A task of the owner's, working, for the anonymous cancel below.
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("wait for the anonymous"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	taskID := string(res.(*a2a.Task).ID)

	publicAgent(t, d, d.agent.Agent.ID)
	served := d.do(raw{method: http.MethodGet, path: "/a2a/" + d.agent.Agent.ID + "/agent-card"})
	card := served.json(t)
	named := map[string]bool{}
	for _, r := range asList(card["security"]) {
		for k := range r.(map[string]any) {
			named[k] = true
		}
	}
	if !anonymousAlternative(card) || !named["apiKey"] || !named["bearer"] || len(asList(card["security"])) != 3 || len(asList(card["securityRequirements"])) != 3 {
		t.Errorf("public card: security %v, securityRequirements %v", card["security"], card["securityRequirements"])
	}
	for name, sc := range card["securitySchemes"].(map[string]any) {
		desc, _ := sc.(map[string]any)["description"].(string)
		for _, op := range []string{"extended agent card", "cancel", "push notification"} {
			if !strings.Contains(desc, op) {
				t.Errorf("scheme %s: description %q does not name %q", name, desc, op)
			}
		}
	}
	for version, parse := range map[string]agentcard.Parser{"1.0": agentcard.DefaultCardParser, "0.3": a2av0.NewAgentCardParser()} {
		parsed, err := parse(served.body)
		if err != nil {
			t.Errorf("the official %s parser refuses the public card: %v", version, err)
			continue
		}
		if len(parsed.SecurityRequirements) != 3 {
			t.Errorf("the official %s parser reads the requirements %v", version, parsed.SecurityRequirements)
		}
	}

	// What the card declares is what the endpoint does.
	anon := func(version, method string, params any) *answer {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 5, "method": method, "params": params})
		h := map[string]string{}
		if version == "1.0" {
			h["A2A-Version"] = "1.0"
		}
		return d.do(raw{method: http.MethodPost, path: "/a2a/" + d.agent.Agent.ID, header: h, body: string(b)})
	}
	for _, c := range []struct {
		name, version, method string
		params                any
	}{
		{"cancel", "1.0", "CancelTask", map[string]any{"id": taskID}},
		{"push set", "0.3", "tasks/pushNotificationConfig/set", map[string]any{"taskId": taskID, "pushNotificationConfig": map[string]any{"url": "https://example.com/hook"}}},
		{"push list", "1.0", "ListTaskPushNotificationConfigs", map[string]any{"taskId": taskID}},
	} {
		a := anon(c.version, c.method, c.params)
		if a.status != http.StatusUnauthorized || !strings.Contains(a.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("anonymous %s: %d %s, want 401 with a challenge", c.name, a.status, a.body)
			continue
		}
		checkRPCError(t, "anonymous "+c.name, c.version, a, -31401, "UNAUTHENTICATED")
	}
	if run := d.p.GetTask(taskID); run.Status.Terminal() {
		t.Errorf("the anonymous cancel ended the task: %s", run.Status)
	}
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(taskID)}); err != nil {
		t.Errorf("the owner's key cancels: %v", err)
	}
}

// TestCard_03ExtendedCardKeepsSchemesAndListsEachInterfaceOnce: a 0.3
// caller's extended card (JSON-RPC and HTTP+JSON) is the public card's 0.3
// form with the runtime's presence: its security schemes and requirements,
// its 0.3 url and preferred transport, and each interface of the agent once
// in additionalInterfaces, the preferred one among them (0.3 §5.5).
func TestCard_03ExtendedCardKeepsSchemesAndListsEachInterfaceOnce(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{})
	for _, door := range extendedCardDoors {
		if door.name != "0.3 agent/getAuthenticatedExtendedCard" && door.name != "GET /v1/card" {
			continue
		}
		a := door.call(d, d.agent.Agent.ID, map[string]string{"X-API-Key": d.key})
		card := a.json(t)
		if door.version != "" {
			card, _ = card["result"].(map[string]any)
		}
		if a.status != http.StatusOK || card == nil {
			t.Fatalf("%s: %d %s", door.name, a.status, a.body)
		}
		schemes, _ := card["securitySchemes"].(map[string]any)
		apiKey, _ := schemes["apiKey"].(map[string]any)
		bearer, _ := schemes["bearer"].(map[string]any)
		if apiKey["type"] != "apiKey" || apiKey["in"] != "header" || apiKey["name"] != "X-API-Key" || bearer["type"] != "http" || bearer["scheme"] != "Bearer" {
			t.Errorf("%s: securitySchemes %v", door.name, card["securitySchemes"])
		}
		if len(asList(card["security"])) != 2 {
			t.Errorf("%s: security %v", door.name, card["security"])
		}
		if card["url"] != d.url || card["preferredTransport"] != "JSONRPC" || card["protocolVersion"] != "0.3" {
			t.Errorf("%s: url %v, preferredTransport %v, protocolVersion %v", door.name, card["url"], card["preferredTransport"], card["protocolVersion"])
		}
		seen := map[string]int{}
		for _, i := range asList(card["additionalInterfaces"]) {
			m := i.(map[string]any)
			seen[m["url"].(string)+" "+m["transport"].(string)]++
		}
		if len(seen) != 2 || seen[d.url+" JSONRPC"] != 1 || seen[d.url+" HTTP+JSON"] != 1 {
			t.Errorf("%s: additionalInterfaces %v, want each interface once", door.name, card["additionalInterfaces"])
		}
		if !strings.Contains(meshtest.JSON(card), a2aserver.PresenceExtension) {
			t.Errorf("%s: no presence extension: %s", door.name, a.body)
		}
	}
}

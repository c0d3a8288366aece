package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// internalTargets are URLs whose host is an internal IPv4 address in an
// IPv6 form: 6to4, NAT64 (well-known and local-use), IPv4-mapped,
// IPv4-compatible and Teredo. The first two are the forms that got through.
var internalTargets = []string{
	"http://[2002:7f00:1::]/",
	"http://[2002:a9fe:a9fe::]/latest/meta-data",
	"http://[64:ff9b::7f00:1]/hook",
	"http://[64:ff9b:1::a9fe:a9fe]/hook",
	"http://[::ffff:127.0.0.1]/hook",
	"http://[::169.254.169.254]/hook",
	"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",
}

// TestSSRF_EmbeddedInternalAddressesAreRefusedAtEveryEndpoint: webhooks, A2A
// push configurations, partner platforms and routing rules that name a
// partner URL all refuse every internal target with 400
// TARGET_NOT_ALLOWED (A2A: -32602), and none of them is stored. (The
// connections the webhooks and delegation services make are checked by the
// same guard when dialed: internal/netguard's tests.)
func TestSSRF_EmbeddedInternalAddressesAreRefusedAtEveryEndpoint(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("guarded")
	other := p.CreateAgent("other")
	owner := func(method, path string, body any) *meshtest.Response {
		return p.Send(t, meshtest.Request{Method: method, Path: path, Owner: true, JSON: body})
	}
	partner := owner(http.MethodPost, "/a2a/partners", map[string]any{"name": "public", "url": "http://93.184.216.34"}).Expect(t, http.StatusCreated)
	var pt struct {
		PartnerID string `json:"partner_id"`
	}
	partner.Decode(t, &pt)
	task := a2aCall(t, p, agent.ID, "SendMessage", map[string]any{
		"message":       map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "x"}}},
		"configuration": map[string]any{"returnImmediately": true},
	})
	result, _ := task["result"].(map[string]any)
	sent, _ := result["task"].(map[string]any)
	taskID, _ := sent["id"].(string)
	if taskID == "" {
		t.Fatalf("no task: %v", task)
	}

	for _, target := range internalTargets {
		refused := func(endpoint string, r *meshtest.Response) {
			t.Helper()
			e := r.ExpectError(t, http.StatusBadRequest, mesh.CodeTargetNotAllowed)
			if !strings.Contains(e.Error.Message, "allow-private-webhooks") {
				t.Errorf("%s %s: the refusal does not say how to allow it: %s", endpoint, target, e.Error.Message)
			}
		}
		refused("webhook", owner(http.MethodPost, "/webhooks", map[string]any{"url": target}))
		refused("partner", owner(http.MethodPost, "/a2a/partners", map[string]any{"name": "internal", "url": target}))
		refused("routing rule", owner(http.MethodPost, "/agent-accounts/"+agent.ID+"/routing-rules", map[string]any{
			"match": map[string]any{"keywords": []string{"x"}}, "target": map[string]any{"partner_id": pt.PartnerID, "url": target},
		}))
		push := a2aCall(t, p, agent.ID, "CreateTaskPushNotificationConfig", map[string]any{"taskId": taskID, "url": target})
		e, _ := push["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32602) || !strings.Contains(e["message"].(string), "allow-private-webhooks") {
			t.Errorf("A2A push %s: %v, want -32602 naming --allow-private-webhooks", target, push)
		}
		send := a2aCall(t, p, other.ID, "SendMessage", map[string]any{
			"message":       map[string]any{"messageId": mesh.NewID(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": "y"}}},
			"configuration": map[string]any{"returnImmediately": true, "taskPushNotificationConfig": map[string]any{"url": target}},
		})
		if e, _ := send["error"].(map[string]any); e == nil || e["code"] != float64(-32602) {
			t.Errorf("A2A send with push %s: %v, want -32602", target, send)
		}
	}

	// Nothing was stored.
	var hooks struct {
		Webhooks []json.RawMessage `json:"webhooks"`
	}
	owner(http.MethodGet, "/webhooks", nil).Expect(t, http.StatusOK).Decode(t, &hooks)
	var partners struct {
		Partners []json.RawMessage `json:"partners"`
	}
	owner(http.MethodGet, "/a2a/partners", nil).Expect(t, http.StatusOK).Decode(t, &partners)
	var rules struct {
		Rules []json.RawMessage `json:"rules"`
	}
	owner(http.MethodGet, "/agent-accounts/"+agent.ID+"/routing-rules", nil).Expect(t, http.StatusOK).Decode(t, &rules)
	configs := a2aCall(t, p, agent.ID, "ListTaskPushNotificationConfigs", map[string]any{"taskId": taskID})
	list, _ := configs["result"].(map[string]any)
	if len(hooks.Webhooks) != 0 || len(partners.Partners) != 1 || len(rules.Rules) != 0 || len(list["configs"].([]any)) != 0 {
		t.Fatalf("refused targets were stored: %d webhooks, %d partners (want the public one), %d rules, push configs %v",
			len(hooks.Webhooks), len(partners.Partners), len(rules.Rules), list)
	}
}

// a2aCall makes one A2A 1.0 JSON-RPC call to an agent with the owner
// credential and returns the decoded answer.
func a2aCall(t *testing.T, p *meshtest.Platform, agentID, method string, params any) map[string]any {
	t.Helper()
	r := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/a2a/" + agentID, Owner: true,
		Header: http.Header{"A2A-Version": {"1.0"}},
		JSON:   map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}})
	var m map[string]any
	r.Decode(t, &m)
	return m
}

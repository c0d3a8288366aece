package credentials_test

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

const attachPath = "/agent-runtimes/runtime/attach-via-pairing"

func attach(t *testing.T, p *meshtest.Platform, body map[string]any) *meshtest.Response {
	t.Helper()
	return p.Send(t, meshtest.Request{Method: http.MethodPost, Path: attachPath, JSON: body})
}

func issue(t *testing.T, p *meshtest.Platform, agentID string, ttlSeconds int) meshapi.PairingCode {
	t.Helper()
	var c meshapi.PairingCode
	body := map[string]any{}
	if ttlSeconds > 0 {
		body["ttl_seconds"] = ttlSeconds
	}
	resp := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + agentID + "/pairing-codes", Owner: true, JSON: body}).Expect(t, http.StatusCreated)
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("a pairing code was served cacheable: %v", resp.Header)
	}
	resp.Decode(t, &c)
	return c
}

// TestAttach_CodeIsOneTime: seed 001 §3, a pairing code binds one runtime once.
func TestAttach_CodeIsOneTime(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("paired")
	code := issue(t, p, agent.ID, 0)
	if code.AgentID != agent.ID || !mesh.ValidID(code.CodeID) || time.Until(code.ExpiresAt) < 9*time.Minute {
		t.Fatalf("issued code: %+v, want the agent's, with the default ten-minute lifetime", code)
	}
	var a meshapi.AttachResponse
	attach(t, p, map[string]any{"pairing_token": code.PairingToken, "device_name": "MacBook-Pro", "local_executor": map[string]any{"type": "claude_cli"}}).
		Expect(t, http.StatusOK).Decode(t, &a)
	if a.AgentID != agent.ID || !mesh.ValidID(a.RuntimeID) || a.HeartbeatTimeoutMS != 3000 || a.LeaseMS != 2000 {
		t.Fatalf("attach answer: %+v", a)
	}
	if a.NATS.URL != p.NATSURL() || a.NATS.InboxPrefix != bus.RuntimeInboxPrefix(a.RuntimeID) {
		t.Fatalf("attach answer's NATS details: %+v", a.NATS)
	}
	v := p.WaitRuntimeView(t, agent.ID, a.RuntimeID, meshtest.Listed)
	if v.DeviceName != "MacBook-Pro" || v.HostType != "claude_cli" || v.HostLabel != "Claude Code CLI" || v.State != mesh.RuntimeActive {
		t.Fatalf("runtime as people see it: %+v", v)
	}

	e := attach(t, p, map[string]any{"pairing_token": code.PairingToken}).ExpectError(t, http.StatusUnauthorized, mesh.CodeInvalidPairing)
	if !strings.Contains(e.Error.Message, "generate a new pairing code") {
		t.Errorf("reused code: message %q does not say what to do", e.Error.Message)
	}
	if n := len(p.RuntimeViews(t, agent.ID)); n != 1 {
		t.Fatalf("agent has %d runtimes after a reused code, want 1", n)
	}
}

// TestAttach_UnknownMalformedAndExpiredCodesAreRefused.
func TestAttach_UnknownMalformedAndExpiredCodesAreRefused(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.PairingCodeTTL = 500 * time.Millisecond })
	agent := p.CreateAgent("late")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}, "type": {"pairing_code.expired"}})
	code := issue(t, p, agent.ID, 0)
	if d := code.ExpiresAt.Sub(time.Now()); d > 500*time.Millisecond {
		t.Fatalf("code lives %s, longer than the configured 500ms", d)
	}
	for _, token := range []string{secret.NewPairingCode(), "ABCDE", "not a code at all", strings.Repeat("A", 5000), secret.NewToken(secret.PrefixRuntime)} {
		attach(t, p, map[string]any{"pairing_token": token}).ExpectError(t, http.StatusUnauthorized, mesh.CodeInvalidPairing)
	}
	for _, body := range []map[string]any{{}, {"pairing_token": ""}, {"pairing_token": "   "}} {
		attach(t, p, body).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	}
	// Waiting for the code's own expiry time; nothing else is awaited.
	time.Sleep(time.Until(code.ExpiresAt) + 50*time.Millisecond)
	e := attach(t, p, map[string]any{"pairing_token": code.PairingToken}).ExpectError(t, http.StatusUnauthorized, mesh.CodeInvalidPairing)
	if !strings.Contains(e.Error.Message, "expired") {
		t.Errorf("expired code: message %q does not say it expired", e.Error.Message)
	}
	if ev := events.Next(t, 5*time.Second); ev.Subject != code.CodeID {
		t.Fatalf("expired event about %s, want the code %s", ev.Subject, code.CodeID)
	}
	if n := len(p.RuntimeViews(t, agent.ID)); n != 0 {
		t.Fatalf("agent has %d runtimes after refused attaches", n)
	}
	// A code asked for with a shorter lifetime than the platform's gets it;
	// a longer one is capped.
	if c := issue(t, p, agent.ID, 3600); c.ExpiresAt.Sub(time.Now()) > 500*time.Millisecond {
		t.Fatalf("ttl_seconds 3600 outlived the platform's 500ms limit: expires %v", c.ExpiresAt)
	}
}

// TestAttach_CodeAsTypedByAPersonWorks: lowercase, without dashes, with spaces.
func TestAttach_CodeAsTypedByAPersonWorks(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("typed")
	for _, typed := range []func(string) string{
		strings.ToLower,
		func(c string) string { return strings.ReplaceAll(c, "-", "") },
		func(c string) string { return " " + strings.ReplaceAll(strings.ToLower(c), "-", " ") + " " },
	} {
		code := issue(t, p, agent.ID, 0)
		attach(t, p, map[string]any{"pairing_token": typed(code.PairingToken)}).Expect(t, http.StatusOK)
	}
}

// TestAttach_ConcurrentRedeemsOfOneCodeHaveOneWinner: fifty runtimes racing
// with the same code; the code is one-time even then.
func TestAttach_ConcurrentRedeemsOfOneCodeHaveOneWinner(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("contested")
	code := issue(t, p, agent.ID, 0)
	const n = 50
	resps := make([]*meshtest.Response, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resps[i] = attach(t, p, map[string]any{"pairing_token": code.PairingToken})
		}()
	}
	close(start)
	wg.Wait()
	wins, refusals := 0, 0
	var winner meshapi.AttachResponse
	for _, r := range resps {
		switch r.Status {
		case http.StatusOK:
			wins++
			r.Decode(t, &winner)
		case http.StatusUnauthorized:
			if e := r.Err(t); e.Error.Code == string(mesh.CodeInvalidPairing) {
				refusals++
			}
		default:
			t.Errorf("attach answered HTTP %d: %s", r.Status, r.Body)
		}
	}
	if wins != 1 || refusals != n-1 {
		t.Fatalf("%d attaches succeeded and %d were refused with INVALID_PAIRING_TOKEN, want 1 and %d", wins, refusals, n-1)
	}
	p.WaitRuntimeView(t, agent.ID, winner.RuntimeID, meshtest.Listed)
	views := p.RuntimeViews(t, agent.ID)
	if len(views) != 1 || views[0].RuntimeID != winner.RuntimeID {
		t.Fatalf("runtimes after the race: %+v, want only the winner %s", views, winner.RuntimeID)
	}
	p.Heartbeat(t, winner.RuntimeToken)
}

// TestAttach_RuntimeTokenIsRandomAndStoredOnlyAsAHash: 256 random bits,
// recognisable by prefix, and never written to the platform's store in plain
// text (design §7); pairing codes neither.
func TestAttach_RuntimeTokenIsRandomAndStoredOnlyAsAHash(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("hashed")
	var codes, tokens []string
	for range 3 {
		code := issue(t, p, agent.ID, 0)
		var a meshapi.AttachResponse
		attach(t, p, map[string]any{"pairing_token": code.PairingToken}).Expect(t, http.StatusOK).Decode(t, &a)
		codes, tokens = append(codes, code.PairingToken), append(tokens, a.RuntimeToken)
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a.RuntimeToken, secret.PrefixRuntime))
		if !strings.HasPrefix(a.RuntimeToken, secret.PrefixRuntime) || err != nil || len(raw) < 32 {
			t.Fatalf("runtime token %q…: want %s followed by at least 256 bits of base64url", a.RuntimeToken[:8], secret.PrefixRuntime)
		}
	}
	if tokens[0] == tokens[1] || tokens[1] == tokens[2] {
		t.Fatal("two attaches were given the same token")
	}
	unused := issue(t, p, agent.ID, 0).PairingToken
	p.Stop()
	stored := meshtest.Files(t, p.DataDir, platform.OwnerTokenPath(p.DataDir))
	all := ""
	for _, content := range stored {
		all += content
	}
	// The scan reads the store: the current credential's hash is there.
	if !strings.Contains(all, secret.Hash(tokens[2])) || !strings.Contains(all, secret.Hash(secret.NormalizePairingCode(unused))) {
		t.Fatal("the hashes of the credential and the unused code are not in the data dir; the scan would prove nothing")
	}
	meshtest.AssertNoSecrets(t, append(append(codes, tokens...), unused), stored)
}

// TestAttach_RepairReplacesThePreviousRuntime: one active runtime per agent
// (seed 001 §2.1); a new pairing of the same agent retires the old one.
func TestAttach_RepairReplacesThePreviousRuntime(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("moved")
	events := p.StreamEvents(t, url.Values{"agent_id": {agent.ID}, "type": {"runtime.revoked"}})
	old, run := p.HeldRun(t, agent.ID, "old machine's work")

	replacement := p.OnlineRuntime(t, agent.ID)
	if replacement.RuntimeID == old.RuntimeID {
		t.Fatal("the re-pair reused the old runtime's id without being asked to")
	}
	for _, path := range []string{"/agent-runtimes/runtime/heartbeat", "/agent-accounts/" + agent.ID + "/task-runs/pull", "/task-runs/" + run.ID + "/complete"} {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: path, RuntimeToken: old.RuntimeToken, JSON: map[string]any{}}).
			ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	}
	p.WaitRuntimeView(t, agent.ID, replacement.RuntimeID, meshtest.Listed)
	p.WaitRuntimeView(t, agent.ID, old.RuntimeID, func(v mesh.RuntimeView) bool { return v.State != mesh.RuntimeActive })
	views := p.RuntimeViews(t, agent.ID)
	if len(views) != 2 || views[0].RuntimeID != replacement.RuntimeID || views[0].State != mesh.RuntimeActive || views[0].Status != mesh.PresenceOnline {
		t.Fatalf("runtimes after the re-pair: %+v, want the replacement first, active and online", views)
	}
	if views[1].RuntimeID != old.RuntimeID || views[1].State != mesh.RuntimeReplaced || views[1].Status != mesh.PresenceOffline {
		t.Fatalf("old runtime after the re-pair: %+v, want replaced and offline", views[1])
	}
	if ev := events.Next(t, 5*time.Second); ev.Subject != old.RuntimeID || !strings.Contains(string(ev.Data), "replaced") {
		t.Fatalf("revoked event: %s about %s", ev.Data, ev.Subject)
	}
	next := p.CreateTask(agent.ID, "new machine's work")
	if got := p.PullRun(t, agent.ID, replacement.RuntimeToken); got.ID != next.ID {
		t.Fatalf("replacement pulled %s, want %s", got.ID, next.ID)
	}

	// A re-pair that names its runtime id keeps the identity but not the token.
	var kept meshapi.AttachResponse
	attach(t, p, map[string]any{"pairing_token": p.PairingCode(agent.ID), "runtime_id": replacement.RuntimeID}).Expect(t, http.StatusOK).Decode(t, &kept)
	if kept.RuntimeID != replacement.RuntimeID || kept.RuntimeToken == replacement.RuntimeToken {
		t.Fatalf("re-pair with runtime_id: id %s (want %s), token changed %v", kept.RuntimeID, replacement.RuntimeID, kept.RuntimeToken != replacement.RuntimeToken)
	}
	p.Heartbeat(t, kept.RuntimeToken)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: replacement.RuntimeToken, JSON: map[string]any{}}).
		ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	// A runtime id of another agent is not taken over.
	other := p.CreateAgent("other")
	var foreign meshapi.AttachResponse
	attach(t, p, map[string]any{"pairing_token": p.PairingCode(other.ID), "runtime_id": kept.RuntimeID}).Expect(t, http.StatusOK).Decode(t, &foreign)
	if foreign.RuntimeID == kept.RuntimeID || foreign.AgentID != other.ID {
		t.Fatalf("another agent's pairing took over runtime %s", kept.RuntimeID)
	}
	p.Heartbeat(t, kept.RuntimeToken)
}

// TestRevoke_TokenIsRefusedAfterwards: revocation by the owner, or by the
// runtime itself (unpair), ends the credential at once.
func TestRevoke_TokenIsRefusedAfterwards(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("revoked")
	rt := p.OnlineRuntime(t, agent.ID)

	var revoked mesh.Runtime
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + rt.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK).Decode(t, &revoked)
	if revoked.State != mesh.RuntimeRevoked || revoked.RevokedAt == nil {
		t.Fatalf("revoke answered %+v", revoked)
	}
	for _, path := range []string{"/agent-runtimes/runtime/heartbeat", "/agent-accounts/" + agent.ID + "/task-runs/pull", "/agent-runtimes/runtime/revoke"} {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: path, RuntimeToken: rt.RuntimeToken, JSON: map[string]any{}}).
			ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
	}
	if v := p.WaitRuntimeView(t, agent.ID, rt.RuntimeID, func(v mesh.RuntimeView) bool { return v.State != mesh.RuntimeActive }); v.State != mesh.RuntimeRevoked || v.Status != mesh.PresenceOffline {
		t.Fatalf("revoked runtime as people see it: %+v", v)
	}
	// Revoking again changes nothing.
	var again mesh.Runtime
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + rt.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK).Decode(t, &again)
	if again.State != mesh.RuntimeRevoked || !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("second revoke: %+v", again)
	}

	// The agent pairs again (never a new agent, seed 001 §4.7), then unpairs itself.
	fresh := p.OnlineRuntime(t, agent.ID)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/revoke", RuntimeToken: fresh.RuntimeToken}).Expect(t, http.StatusOK)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat", RuntimeToken: fresh.RuntimeToken, JSON: map[string]any{}}).
		ExpectError(t, http.StatusUnauthorized, mesh.CodeUnauthorized)
}

// TestAttach_RejectedAttachDoesNotUseUpTheCode: a request refused for its
// own fields leaves the code redeemable.
func TestAttach_RejectedAttachDoesNotUseUpTheCode(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	agent := p.CreateAgent("careful")
	code := issue(t, p, agent.ID, 0)
	for _, body := range []map[string]any{
		{"pairing_token": code.PairingToken, "device_name": strings.Repeat("d", 513)},
		{"pairing_token": code.PairingToken, "local_executor": map[string]any{"cwd": strings.Repeat("c", 513)}},
		{"pairing_token": code.PairingToken, "local_executor": "claude"},
	} {
		attach(t, p, body).ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	}
	attach(t, p, map[string]any{"pairing_token": code.PairingToken, "device_name": "fine"}).Expect(t, http.StatusOK)
}

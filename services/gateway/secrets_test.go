package gateway_test

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
	"github.com/nats-io/nats.go"
)

// TestSecrets_NeverAppearInLogsEventsErrorsOutputOrStore runs a full flow —
// pairing, re-pairing, revocation, work over HTTP and NATS, artifacts, and
// requests with wrong credentials — with debug logs captured, then searches
// everything the platform said or stored for every credential involved
// (design §7, seed 001 §5.2 and §10).
func TestSecrets_NeverAppearInLogsEventsErrorsOutputOrStore(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	texts := map[string]string{}
	keep := func(name string, r *meshtest.Response) { texts[name] = string(r.Body) }
	secrets := []string{p.OwnerToken}

	agentA, agentB := p.CreateAgent("alpha"), p.CreateAgent("beta")
	codeA := p.PairingCode(agentA.ID)
	secrets = append(secrets, codeA)
	attach := func(code string) (meshtest.Attached, *meshtest.Response) {
		resp := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/attach-via-pairing",
			JSON: map[string]any{"pairing_token": code, "device_name": "laptop"}})
		var a meshtest.Attached
		if resp.Status == http.StatusOK {
			resp.Decode(t, &a)
		}
		return a, resp
	}
	rtA, _ := attach(codeA)
	secrets = append(secrets, rtA.RuntimeToken)
	_, reused := attach(codeA)
	keep("reused code answer", reused.Expect(t, http.StatusUnauthorized))

	// Re-pair A: the first credential is replaced.
	codeA2 := p.PairingCode(agentA.ID)
	rtA2, _ := attach(codeA2)
	secrets = append(secrets, codeA2, rtA2.RuntimeToken)
	keep("replaced token heartbeat", p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/heartbeat",
		RuntimeToken: rtA.RuntimeToken, JSON: map[string]any{}}).Expect(t, http.StatusUnauthorized))

	// B pairs and is revoked; a code is left unused and one expires.
	codeB := p.PairingCode(agentB.ID)
	rtB, _ := attach(codeB)
	unused := p.PairingCode(agentB.ID)
	var short meshapi.PairingCode
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-accounts/" + agentB.ID + "/pairing-codes", Owner: true,
		JSON: map[string]any{"ttl_seconds": 1}}).Expect(t, http.StatusCreated).Decode(t, &short)
	secrets = append(secrets, codeB, rtB.RuntimeToken, unused, short.PairingToken)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/" + rtB.RuntimeID + "/revoke", Owner: true}).Expect(t, http.StatusOK)
	keep("revoked token pull", p.Pull(t, agentB.ID, rtB.RuntimeToken, "").Expect(t, http.StatusUnauthorized))

	// Work over HTTP: success, failure, artifact, cancel.
	p.Heartbeat(t, rtA2.RuntimeToken)
	ok := p.CreateTask(agentA.ID, "write it")
	bad := p.CreateTask(agentA.ID, "break it")
	canceled := p.CreateTask(agentA.ID, "never mind")
	p.PullRun(t, agentA.ID, rtA2.RuntimeToken)
	p.Report(t, ok.ID, "progress", rtA2.RuntimeToken, map[string]any{"message": "working", "percent": 10}).Expect(t, http.StatusOK)
	upload(t, p, ok.ID, rtA2.RuntimeToken, map[string]any{"filename": "out/r.md", "content_text": "# result"}).Expect(t, http.StatusCreated)
	p.Report(t, ok.ID, "complete", rtA2.RuntimeToken, map[string]any{"output": map[string]any{"text": "done"}}).Expect(t, http.StatusOK)
	p.PullRun(t, agentA.ID, rtA2.RuntimeToken)
	p.Report(t, bad.ID, "fail", rtA2.RuntimeToken, map[string]any{"output": map[string]any{"error": "boom", "code": "HOST_CRASHED"}}).Expect(t, http.StatusOK)
	p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + canceled.ID + "/cancel", Owner: true}).Expect(t, http.StatusOK)

	// Wrong credentials of every kind.
	wrongOwner, wrongRuntime := secret.NewToken(secret.PrefixOwner), secret.NewToken(secret.PrefixRuntime)
	secrets = append(secrets, wrongOwner, wrongRuntime)
	keep("wrong owner", p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs",
		Header: http.Header{"Authorization": {"Bearer " + wrongOwner}}}).Expect(t, http.StatusUnauthorized))
	keep("runtime token as owner", p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs",
		Header: http.Header{"Authorization": {"Bearer " + rtA2.RuntimeToken}}}).Expect(t, http.StatusUnauthorized))
	keep("wrong runtime", p.Pull(t, agentA.ID, wrongRuntime, "").Expect(t, http.StatusUnauthorized))
	keep("owner as runtime", p.Pull(t, agentA.ID, p.OwnerToken, "").Expect(t, http.StatusUnauthorized))
	keep("unknown code", p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/attach-via-pairing",
		JSON: map[string]any{"pairing_token": secret.NewPairingCode()}}).Expect(t, http.StatusUnauthorized))
	keep("runtime token as code", p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/agent-runtimes/runtime/attach-via-pairing",
		JSON: map[string]any{"pairing_token": rtA2.RuntimeToken}}).Expect(t, http.StatusUnauthorized))
	// Waiting for the short code's own expiry time; nothing else is awaited.
	time.Sleep(time.Until(short.ExpiresAt) + 50*time.Millisecond)
	_, expired := attach(short.PairingToken)
	keep("expired code", expired.Expect(t, http.StatusUnauthorized))

	// NATS: a good connection does some work; refused ones leave log lines.
	nc := p.RuntimeConn(t, rtA2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := meshapi.NewClient(nc).Runtime(agentA.ID, rtA2.RuntimeID).Heartbeat(ctx, meshapi.HeartbeatRequest{}); err != nil {
		t.Fatalf("heartbeat over NATS: %v", err)
	}
	_ = nc.Publish("mesh.rt."+agentB.ID+"."+rtB.RuntimeID+".heartbeat", nil)
	_ = nc.Flush()
	for _, token := range []string{rtB.RuntimeToken, wrongRuntime, p.OwnerToken} {
		if bad, err := nats.Connect(p.NATSURL(), nats.Token(token), nats.MaxReconnects(0)); err == nil {
			bad.Close()
			t.Fatal("a NATS connection with a refused credential was admitted")
		} else {
			texts["nats error "+token[:6]] = err.Error()
		}
	}

	// Everything people can read back.
	for _, path := range []string{"/task-runs?limit=500", "/agent-accounts", "/agent-accounts/" + agentA.ID + "/runtimes",
		"/agent-accounts/" + agentB.ID + "/runtimes", "/task-runs/" + ok.ID + "/artifacts"} {
		keep("GET "+path, p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path, Owner: true}).Expect(t, http.StatusOK))
	}
	for _, run := range []mesh.TaskRun{p.GetTask(ok.ID), p.GetTask(bad.ID), p.GetTask(canceled.ID)} {
		texts["output of "+run.ID] = string(run.Output) + meshtest.JSON(run.Error)
		for _, a := range run.Artifacts {
			keep("artifact "+a.ArtifactID, p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/artifacts/" + a.ArtifactID + "/content", Owner: true}).Expect(t, http.StatusOK))
		}
	}

	// Every event since the start, up to a marker created last.
	marker := p.CreateAgent("end of flow")
	stream := p.StreamEvents(t, url.Values{"since": {"1h"}})
	evs := stream.Until(t, 10*time.Second, meshtest.TypeIs("agent.created", marker.ID))
	if len(evs) < 20 {
		t.Fatalf("only %d events were read back; the flow emits more", len(evs))
	}
	seen := map[string]bool{}
	for i, ev := range evs {
		texts["event "+strconv.Itoa(i)+" "+ev.Type] = ev.Raw
		seen[ev.Type] = true
	}
	for _, typ := range []string{mesh.EventPairingCodeIssued, mesh.EventPairingCodeRedeemed, mesh.EventPairingCodeExpired, mesh.EventRuntimeAttached,
		mesh.EventRuntimeRevoked, mesh.EventRuntimeOnline, mesh.EventTaskRunCompleted, mesh.EventTaskRunFailed, mesh.EventArtifactCreated} {
		if !seen[typ] {
			t.Errorf("no %s event was read back; the scan would miss what it carries", typ)
		}
	}

	// What the platform stored: JetStream files hold only hashes. The scan is
	// shown to read the store by finding a credential's hash there.
	p.Stop()
	texts["logs"] = p.Logs.String()
	stored := meshtest.Files(t, p.DataDir, platform.OwnerTokenPath(p.DataDir))
	found := false
	for _, content := range stored {
		found = found || strings.Contains(content, secret.Hash(rtA2.RuntimeToken))
	}
	if !found {
		t.Fatalf("the hash of the runtime token is not in %s; the store scan reads nothing useful", filepath.Join(p.DataDir, "jetstream"))
	}
	for path, content := range stored {
		texts["file "+path] = content
	}
	if len(texts["logs"]) < 1000 {
		t.Fatalf("only %d bytes of logs were captured", len(texts["logs"]))
	}
	meshtest.AssertNoSecrets(t, secrets, texts)
}

package a2aserver_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/a2atoken"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
)

// TestSecrets_A2ACredentialsNeverLeak uses API keys (good, revoked, of
// another agent, unknown), platform JWTs (good and expired) and a push
// configuration's token and credentials, with debug logs captured, then
// searches the logs, every event, every error answer and every task's
// output for them, and the store for the keys and tokens (the platform
// keeps only their hashes; the signing key and the push credentials it must
// keep to use, so those are searched for everywhere else).
func TestSecrets_A2ACredentialsNeverLeak(t *testing.T) {
	t.Parallel()
	d := startEndpoint(t, endpointOptions{platform: func(c *platform.Config) {
		c.AllowPrivateWebhooks = true
		c.WebhookRetryMin = 20 * time.Millisecond
		c.WebhookRetryMax = 40 * time.Millisecond
		c.WebhookRetryFor = 200 * time.Millisecond
	}})
	agentID := d.agent.Agent.ID
	texts := map[string]string{}
	revoked := d.newKeyFor(agentID, nil)
	d.p.Do(http.MethodDelete, "/a2a/"+agentID+"/api-keys/"+revoked.KeyID, nil, nil)
	other := d.p.CreateAgent("other")
	otherKey := d.newKeyFor(other.ID, nil).APIKey
	unknown := secret.NewToken(secret.PrefixAPIKey)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	signer, err := a2atoken.Load(ctx, d.p.Conn().JS)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := signer.Sign(a2atoken.TokenRequest{Subject: other.ID, Audience: agentID, Scopes: []string{"a2a:send"}})
	expired, _ := signer.Sign(a2atoken.TokenRequest{Subject: other.ID, Audience: agentID, IssuedAt: time.Now().Add(-time.Hour)})
	kv, _ := d.p.Conn().JS.KeyValue(ctx, bus.BucketConfig)
	e, err := kv.Get(ctx, bus.ConfigA2AJWTSecret)
	if err != nil {
		t.Fatal(err)
	}
	signingKey, _ := base64.RawStdEncoding.DecodeString(string(e.Value()))
	pushToken, pushCred := secret.NewToken("push_"), secret.NewToken("cred_")
	secrets := []string{d.key, revoked.APIKey, otherKey, unknown, good, expired, string(e.Value()), pushToken, pushCred}

	send := func(name string, header map[string]string) {
		h := map[string]string{"A2A-Version": "1.0"}
		for k, v := range header {
			h[k] = v
		}
		a := d.do(raw{method: http.MethodPost, path: "/a2a/" + agentID, header: h,
			body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"` + mesh.NewID() + `","role":"ROLE_USER","parts":[{"text":"secret test"}]}}}`})
		texts[name] = string(a.body) + meshtest.JSON(a.header)
	}
	send("good key", map[string]string{"X-API-Key": d.key})
	send("revoked key", map[string]string{"X-API-Key": revoked.APIKey})
	send("other agent's key", map[string]string{"X-API-Key": otherKey})
	send("unknown key", map[string]string{"Authorization": "Bearer " + unknown})
	send("good JWT", map[string]string{"Authorization": "Bearer " + good})
	send("expired JWT", map[string]string{"Authorization": "Bearer " + expired})
	for _, path := range []string{"/tasks", "/extendedAgentCard"} {
		a := d.do(raw{method: http.MethodGet, path: "/a2a/" + agentID + path, header: map[string]string{"A2A-Version": "1.0", "X-API-Key": revoked.APIKey}})
		texts["REST "+path] = string(a.body)
	}
	// A push configuration whose receiver never answers: retried, then
	// given up on (an event), with its token and credentials kept inside.
	c := d.client("1.0", a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: textMessage("with push"), Config: &a2a.SendMessageConfig{
		PushConfig: &a2a.PushConfig{URL: "http://127.0.0.1:9/nothing-listens", Token: pushToken, Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: pushCred}}}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	texts["task"] = meshtest.JSON(task)
	l, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil || len(l) != 1 {
		t.Fatalf("push configs: %v %d", err, len(l))
	}

	// Every event, up to the give-up of the push.
	cons, err := d.p.Conn().JS.OrderedConsumer(ctx, bus.EventStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		t.Fatal(err)
	}
	gaveUp := false
	for i := 0; !gaveUp; i++ {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("events: read %d, then %v (no delivery_failed)", i, err)
		}
		texts["event "+strconv.Itoa(i)] = string(m.Data()) + meshtest.JSON(m.Headers())
		gaveUp = m.Headers().Get("ce-type") == mesh.EventWebhookDeliveryFailed
	}
	for _, run := range []string{string(task.ID)} {
		texts["run "+run] = meshtest.JSON(d.p.GetTask(run))
	}

	d.p.Stop()
	texts["logs"] = d.p.Logs.String()
	if len(texts["logs"]) < 1000 {
		t.Fatalf("only %d bytes of logs", len(texts["logs"]))
	}
	meshtest.AssertNoSecrets(t, secrets, texts)
	if strings.Contains(texts["logs"], string(signingKey)) {
		t.Error("the signing key is in the logs")
	}
	// The store holds the keys' and tokens' hashes, never themselves.
	stored := meshtest.Files(t, d.p.DataDir, platform.OwnerTokenPath(d.p.DataDir))
	found := false
	for path, content := range stored {
		found = found || strings.Contains(content, secret.Hash(d.key))
		meshtest.AssertNoSecrets(t, []string{d.key, revoked.APIKey, otherKey, good, expired}, map[string]string{path: content})
	}
	if !found {
		t.Fatal("the API key's hash is not in the store; the scan reads nothing useful")
	}
}

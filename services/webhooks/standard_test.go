package webhooks_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/webhooks"
)

// standardLibrary returns a folder holding the official Standard Webhooks
// JavaScript library (npm standardwebhooks) and the receiver script: the
// checked-in folder when its node_modules is installed (CI runs npm ci
// there), else a fresh npm ci in a temporary folder.
func standardLibrary(t *testing.T) string {
	t.Helper()
	return meshtest.NodePackage(t, filepath.Join("testdata", "standardwebhooks"), "standardwebhooks", "receiver.mjs")
}

// verdict is one line of the Node receiver: a delivery and whether the
// library accepted it.
type verdict struct {
	Port     int    `json:"port"`
	Ready    bool   `json:"ready"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Verified bool   `json:"verified"`
	Error    string `json:"error"`
}

// standardReceiver is receiver.mjs running in Node: a loopback webhook
// endpoint that verifies deliveries with the official library.
type standardReceiver struct {
	URL      string
	stdin    io.WriteCloser
	verdicts <-chan verdict
}

func startStandardReceiver(t *testing.T) *standardReceiver {
	t.Helper()
	dir := standardLibrary(t)
	cmd := exec.Command("node", filepath.Join(dir, "receiver.mjs"))
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("node: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan verdict, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var v verdict
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				lines <- v
			}
		}
	}()
	rc := &standardReceiver{stdin: stdin, verdicts: lines}
	v := rc.next(t, 20*time.Second)
	if v.Port == 0 {
		t.Fatalf("receiver did not start: %+v", v)
	}
	rc.URL = "http://127.0.0.1:" + strconv.Itoa(v.Port) + "/hook"
	return rc
}

// next returns the receiver's next line, failing the test after wait.
func (rc *standardReceiver) next(t *testing.T, wait time.Duration) verdict {
	t.Helper()
	select {
	case v, ok := <-rc.verdicts:
		if !ok {
			t.Fatal("receiver exited")
		}
		return v
	case <-time.After(wait):
		t.Fatalf("no word from the receiver within %s", wait)
	}
	return verdict{}
}

// useSecret hands the receiver the webhook's secret and waits until it uses it.
func (rc *standardReceiver) useSecret(t *testing.T, secret string) {
	t.Helper()
	if _, err := io.WriteString(rc.stdin, secret+"\n"); err != nil {
		t.Fatal(err)
	}
	if v := rc.next(t, 10*time.Second); !v.Ready {
		t.Fatalf("receiver answered %+v, want ready", v)
	}
}

// TestWebhooks_GeneratedSecretIsStandardWebhooksAndTheOfficialLibraryVerifiesDeliveries:
// a webhook created without a secret gets "whsec_" and the base64 of random
// bytes, and real deliveries of a run's events to a receiver that verifies
// them with the official Standard Webhooks library (npm standardwebhooks, in
// Node) all pass.
func TestWebhooks_GeneratedSecretIsStandardWebhooksAndTheOfficialLibraryVerifiesDeliveries(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, fastRetries)
	agent := p.CreateAgent("standard")
	rt := p.OnlineRuntime(t, agent.ID)
	rc := startStandardReceiver(t)

	wh := subscribe(t, p, map[string]any{"url": rc.URL, "agent_id": agent.ID,
		"types": []string{"task_run.created", "task_run.progress", "task_run.completed"}})
	raw, ok := strings.CutPrefix(wh.Secret, "whsec_")
	if !ok {
		t.Fatalf("generated secret does not start with whsec_ (hint %s)", wh.SecretHint)
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || len(key) < 24 || len(key) > 64 {
		t.Fatalf("generated secret is not whsec_ + standard base64 of 24 to 64 bytes (decoded %d bytes, %v)", len(key), err)
	}
	rc.useSecret(t, wh.Secret)
	completeRun(t, p, agent.ID, rt.RuntimeToken)

	want := []string{mesh.EventTaskRunCreated, mesh.EventTaskRunProgress, mesh.EventTaskRunCompleted}
	for i := range want {
		v := rc.next(t, 30*time.Second)
		if !v.Verified {
			t.Fatalf("standardwebhooks refused delivery %d (%s): %s", i+1, v.ID, v.Error)
		}
		if v.Type != want[i] {
			t.Fatalf("delivery %d is %s, want %s", i+1, v.Type, want[i])
		}
	}
}

// TestWebhooks_VerifyDecodesWhsecSecrets: Sign and Verify key the HMAC with
// the base64-decoded bytes of a whsec_ secret (the Standard Webhooks test
// vector), and with the raw bytes of any other secret.
func TestWebhooks_VerifyDecodesWhsecSecrets(t *testing.T) {
	// The example of the Standard Webhooks specification.
	const (
		secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		ts     = int64(1614265330)
		body   = `{"test": 2432232314}`
		sig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	key, err := webhooks.Key(secret)
	if err != nil {
		t.Fatal(err)
	}
	if got := webhooks.Sign(key, id, ts, []byte(body)); got != sig {
		t.Fatalf("signature %s, want the specification's %s", got, sig)
	}
	if err := webhooks.Verify(secret, id, strconv.FormatInt(ts, 10), "v1,bogus "+sig, []byte(body), time.Hour*24*365*100, time.Unix(ts, 0)); err != nil {
		t.Fatalf("Verify refused the specification's example: %v", err)
	}
	if err := webhooks.Verify(secret, id, strconv.FormatInt(ts, 10), sig, []byte(body+" "), time.Minute, time.Unix(ts, 0)); err == nil {
		t.Fatal("Verify accepted a changed body")
	}
	rawKey, err := webhooks.Key("a-secret-of-sixteen-bytes")
	if err != nil || string(rawKey) != "a-secret-of-sixteen-bytes" {
		t.Fatalf("a secret without whsec_ is its own key: %q %v", rawKey, err)
	}
	if _, err := webhooks.Key("whsec_not*base64"); err == nil {
		t.Fatal("a whsec_ secret that is not base64 was accepted")
	}
}

// TestWebhooks_WhsecSecretThatIsNotBase64IsRefused: a given secret starting
// with whsec_ must be the base64 Standard Webhooks libraries decode, or the
// webhook is refused with 400 INVALID_REQUEST (without echoing the secret).
func TestWebhooks_WhsecSecretThatIsNotBase64IsRefused(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t, fastRetries)
	const bad = "whsec_this-is*not#base64-at-all"
	res := p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/webhooks", Owner: true,
		JSON: map[string]any{"url": "https://hooks.example.com/a2a", "secret": bad}})
	body := res.ExpectError(t, http.StatusBadRequest, mesh.CodeInvalidRequest)
	if !strings.Contains(body.Error.Message, "base64") || strings.Contains(string(res.Body), bad) {
		t.Fatalf("error %+v, want INVALID_REQUEST saying base64 without the secret", body.Error)
	}
}

package trust_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/meshtest"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/nats-io/nkeys"
)

// deployment is the platform as an operator runs it: nats-server with
// deploy/nats/single.conf as shipped, and each service as its own
// `a2a-platform serve` process.
type deployment struct {
	p    *meshtest.Platform
	conn *bus.Conn
	logs *meshtest.Logs
}

func startDeployment(t *testing.T) *deployment {
	t.Helper()
	dir := t.TempDir()
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	issuerPub, _ := issuer.PublicKey()
	issuerSeed, _ := issuer.Seed()
	password := secret.NewToken("pw_")
	owner := secret.NewToken(secret.PrefixOwner)
	for name, content := range map[string]string{"issuer.nk": string(issuerSeed), "owner.token": owner + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	natsAddr := meshtest.FreeAddr(t)
	meshtest.StartNATSServer(t, filepath.Join("..", "..", "deploy", "nats", "single.conf"), map[string]string{
		"MESH_SERVICE_PASSWORD": password,
		"MESH_AUTH_ISSUER":      issuerPub,
		"MESH_NATS_LISTEN":      natsAddr,
		"MESH_NATS_WS_LISTEN":   meshtest.FreeAddr(t),
		"MESH_NATS_MONITOR":     meshtest.FreeAddr(t),
		"MESH_NATS_STORE":       filepath.Join(dir, "nats"),
	}, natsAddr)
	natsURL := "nats://" + natsAddr

	bin := meshtest.BuildCommand(t, "github.com/a2amesh/a2amesh/cmd/a2a-platform")
	logs := &meshtest.Logs{}
	httpAddr := meshtest.FreeAddr(t)
	for _, svc := range platform.Services {
		args := []string{"serve", svc, "--data-dir", dir, "--nats-url", natsURL, "--log-level", "debug",
			"--lease", "2s", "--heartbeat-timeout", "3s"}
		switch svc {
		case "pairing":
			args = append(args, "--auth-issuer-seed-file", filepath.Join(dir, "issuer.nk"), "--nats-advertise", natsURL)
		case "gateway":
			args = append(args, "--owner-token-file", filepath.Join(dir, "owner.token"), "--http", httpAddr)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "A2A_MESH_NATS_PASSWORD="+password)
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	}
	base := "http://" + httpAddr
	meshtest.Eventually(t, 60*time.Second, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return "the gateway never became ready:\n" + logs.String() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := bus.Connect(ctx, bus.ConnConfig{URL: natsURL, User: "mesh-service", Password: password, Name: "trust test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.NC.Close() })
	p := meshtest.Remote(t, base, owner)
	p.Logs = logs
	return &deployment{p: p, conn: conn, logs: logs}
}

// TestAttack_ServeDeploymentHoldsAgainstEveryCredential runs the attacks
// against nats-server with the shipped configuration and `serve` processes.
func TestAttack_ServeDeploymentHoldsAgainstEveryCredential(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	w := newWorldOn(t, d.p, d.conn)
	attackAsRuntime(t, w)
	attackAsConsumer(t, w)
	for _, how := range []string{"revoked", "replaced"} {
		agent := d.p.CreateAgent(how)
		att := d.p.Attach(agent.ID)
		kickedWithin(t, how, att, func() { endCredential(t, d.p, how, agent.ID, att.RuntimeID) })
	}
	meshtest.AssertNoSecrets(t, nil, map[string]string{"logs": d.logs.String()})
}

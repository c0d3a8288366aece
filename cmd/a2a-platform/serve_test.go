package main_test

import (
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/bus/embedded"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
)

// TestServe_GatewayTakesTheOwnerCredentialFromTheEnvironment: `serve
// gateway` without --owner-token-file accepts the owner credential given in
// A2A_MESH_OWNER_TOKEN (as a Kubernetes Secret hands it over) and refuses
// any other, and logs neither secret.
func TestServe_GatewayTakesTheOwnerCredentialFromTheEnvironment(t *testing.T) {
	t.Parallel()
	issuer, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	issuerPub, _ := issuer.PublicKey()
	password := secret.NewToken("pw_")
	server, err := embedded.Start(embedded.Config{
		StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Logger: zerolog.Nop(),
		Accounts: bus.AccountsConfig{Services: bus.NATSUser{User: "mesh-service", Password: password}, AuthIssuer: issuerPub}.Render(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)

	owner := secret.NewToken(secret.PrefixOwner)
	addr := meshtest.FreeAddr(t)
	logs := &meshtest.Logs{}
	// The agents service answers the listing the credential is tried on.
	for _, args := range [][]string{{"agents"}, {"gateway", "--http", addr}} {
		cmd := exec.Command(bins.Platform, append([]string{"serve", "--nats-url", server.ClientURL(), "--data-dir", t.TempDir()}, args...)...)
		cmd.Env = []string{"HOME=" + t.TempDir(), "A2A_MESH_NATS_PASSWORD=" + password, "A2A_MESH_OWNER_TOKEN=" + owner}
		meshtest.StartCommand(t, cmd, logs)
	}

	base := "http://" + addr
	meshtest.WaitReady(t, base, 30*time.Second, logs)
	nc, err := nats.Connect(server.ClientURL(), nats.UserInfo("mesh-service", password))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	meshtest.WaitServices(t, nc, 30*time.Second, logs, bus.ServiceAgents)

	for token, want := range map[string]int{owner: http.StatusOK, secret.NewToken(secret.PrefixOwner): http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, base+"/agent-accounts", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /agent-accounts with the %s credential: %d, want %d", map[bool]string{true: "owner", false: "other"}[token == owner], resp.StatusCode, want)
		}
	}
	meshtest.AssertNoSecrets(t, []string{owner, password}, map[string]string{"logs": logs.String()})
}

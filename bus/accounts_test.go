package bus

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite deploy/nats/accounts.conf from AccountsConfig")

// DeployAccounts is the accounts configuration deploy/nats ships: services
// connect with a password, and both secrets come from the server's
// environment.
var deployAccounts = AccountsConfig{
	Services:   NATSUser{User: "mesh-service", Password: "$MESH_SERVICE_PASSWORD"},
	AuthIssuer: "$MESH_AUTH_ISSUER",
}

// TestAccounts_DeployConfigIsTheGeneratedOne: the accounts external servers
// run with are exactly those the embedded server runs with.
func TestAccounts_DeployConfigIsTheGeneratedOne(t *testing.T) {
	path := filepath.Join("..", "deploy", "nats", "accounts.conf")
	want := deployAccounts.Render()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from AccountsConfig.Render(); run go test ./bus -run TestAccounts_DeployConfig -update", path)
	}
}

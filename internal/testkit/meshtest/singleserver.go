package meshtest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/secret"
	"github.com/a2amesh/a2amesh/internal/testkit/natsserver"
	"github.com/nats-io/nkeys"
)

// SingleServer is the platform as an operator runs it on one machine:
// nats-server with deploy/nats/single.conf as shipped (monitoring and
// leaf nodes on), and each service as its own `a2a-platform serve`
// process.
type SingleServer struct {
	// NATS is the server; NATSURL its client URL, LeafAddr where sites'
	// leaf nodes connect, MonitorAddr its monitoring endpoint.
	NATS                           *natsserver.Process
	NATSURL, LeafAddr, MonitorAddr string
	// Platform is the API, with the owner's credential.
	Platform *Platform
	// Conn reaches the bus as a service does.
	Conn *bus.Conn
	// Procs are the serve processes, which mask the deployment's secrets.
	Procs *Procs
}

// SingleServerOptions are what a test chooses of a SingleServer.
type SingleServerOptions struct {
	// Root is the repository's root, relative to the test's package.
	Root string
	// Program is the a2a-platform program to serve with.
	Program string
	// ServeArgs are added to every `serve` (e.g. --log-level debug).
	ServeArgs []string
}

// StartSingleServer starts a SingleServer and waits until every service
// answers.
func StartSingleServer(t testing.TB, o SingleServerOptions) *SingleServer {
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
	procs := NewProcs(t)
	procs.Secret(password, owner, string(issuerSeed))
	for name, content := range map[string]string{"issuer.nk": string(issuerSeed), "owner.token": owner + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &SingleServer{LeafAddr: FreeAddr(t), MonitorAddr: FreeAddr(t), Procs: procs}
	natsAddr := FreeAddr(t)
	s.NATSURL = "nats://" + natsAddr
	s.NATS = natsserver.Start(t, filepath.Join(o.Root, "deploy", "nats", "single.conf"), map[string]string{
		"MESH_SERVICE_PASSWORD": password,
		"MESH_AUTH_ISSUER":      issuerPub,
		"MESH_NATS_LISTEN":      natsAddr,
		"MESH_NATS_WS_LISTEN":   FreeAddr(t),
		"MESH_NATS_MONITOR":     s.MonitorAddr,
		"MESH_NATS_STORE":       filepath.Join(dir, "nats"),
		"MESH_NATS_LEAF_LISTEN": s.LeafAddr,
	}, natsAddr)
	httpAddr := FreeAddr(t)
	for _, svc := range platform.Services {
		args := append([]string{"serve", svc, "--data-dir", dir, "--nats-url", s.NATSURL}, o.ServeArgs...)
		switch svc {
		case bus.ServiceCredentials:
			args = append(args, "--auth-issuer-seed-file", filepath.Join(dir, "issuer.nk"), "--nats-advertise", s.NATSURL)
		case bus.ServiceGateway:
			args = append(args, "--owner-token-file", filepath.Join(dir, "owner.token"), "--http", httpAddr)
		}
		procs.Start(svc, []string{"A2A_MESH_NATS_PASSWORD=" + password}, o.Program, args...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, pr := range procs.All() {
				t.Logf("---- %s ----\n%s", pr.Name, Tail(procs.Mask(pr.Logs.String()), 3000))
			}
		}
	})
	base := "http://" + httpAddr
	WaitReady(t, base, 60*time.Second, &Logs{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Conn, err = bus.Connect(ctx, bus.ConnConfig{URL: s.NATSURL, User: bus.DefaultServiceUser, Password: password, Name: "single server test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Conn.NC.Close() })
	WaitServices(t, s.Conn.NC, 60*time.Second, &Logs{}, platform.BusServices...)
	s.Platform = Remote(t, base, owner)
	return s
}

// Output is everything the serve processes printed so far, unmasked (for
// scans that look for secrets in it).
func (s *SingleServer) Output() string {
	var b strings.Builder
	for _, p := range s.Procs.All() {
		b.WriteString(p.Logs.String())
	}
	return b.String()
}

// LeafCount is how many leaf nodes the server has (-1: it did not say).
func (s *SingleServer) LeafCount() int { return LeafCount(s.MonitorAddr) }

// LeafCount is how many leaf node connections the NATS server monitored at
// monitorAddr has (-1: it did not say).
func LeafCount(monitorAddr string) int {
	resp, err := http.Get("http://" + monitorAddr + "/leafz")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var leafz struct {
		Leafs int `json:"leafnodes"`
	}
	if json.NewDecoder(resp.Body).Decode(&leafz) != nil {
		return -1
	}
	return leafz.Leafs
}

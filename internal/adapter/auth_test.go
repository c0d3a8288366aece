package adapter

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapterapi"
	"github.com/a2amesh/a2amesh/internal/provider"
)

func TestListen_RefusesNonLoopbackWithoutAllowRemote(t *testing.T) {
	s, err := New(Config{Provider: provider.Echo{}, Workdir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0", "127.0.0.1"} {
		if ln, err := s.Listen(addr); err == nil {
			ln.Close()
			t.Errorf("Listen(%q) succeeded, want a refusal", addr)
		}
	}
	if _, err := s.Listen("0.0.0.0:0"); !errors.Is(err, ErrRemoteListen) {
		t.Errorf("Listen(0.0.0.0:0) err = %v, want ErrRemoteListen", err)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := s.Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q): %v", addr, err)
			continue
		}
		ln.Close()
	}
}

func TestCheckAddr_AllowRemoteLetsAnyAddressThrough(t *testing.T) {
	s, err := New(Config{Provider: provider.Echo{}, Workdir: t.TempDir(), AllowRemote: true, AuthToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	// Checked without binding: tests stay on loopback.
	if err := s.checkAddr("0.0.0.0:18789"); err != nil {
		t.Fatal(err)
	}
}

func TestNew_AllowRemoteRequiresAToken(t *testing.T) {
	_, err := New(Config{Provider: provider.Echo{}, Workdir: t.TempDir(), AllowRemote: true})
	if !errors.Is(err, ErrRemoteNeedsAuth) {
		t.Fatalf("err = %v, want ErrRemoteNeedsAuth", err)
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true, "LOCALHOST": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "localhost.example.com": false,
	} {
		if got := isLoopbackHost(host); got != want {
			t.Errorf("isLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestAuth_BearerTokenGuardsEverythingButHealth(t *testing.T) {
	const token = "s3cret-token"
	_, ts := startServer(t, Config{Provider: provider.Echo{}, AuthToken: token})

	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /health without a token: %d, want 200", resp.StatusCode)
	}
	for name, auth := range map[string]string{
		"no header":    "",
		"wrong token":  "Bearer wrong",
		"prefix":       "Bearer s3cret",
		"longer":       "Bearer " + token + "x",
		"basic scheme": "Basic " + token,
	} {
		r := post(t.Context(), ts.URL, taskBody("r"), "Authorization", auth)
		status, msg := failureOf(t, r)
		if status != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %q, want 401 with a Bearer challenge", name, status, msg)
		}
		if strings.Contains(string(r.body), token) {
			t.Errorf("%s: the reply reveals the token", name)
		}
	}
	for _, auth := range []string{"Bearer " + token, "bearer " + token} {
		if reply := parseReply(t, post(t.Context(), ts.URL, taskBody("r"), "Authorization", auth)); reply.Kind != adapterapi.KindSuccess {
			t.Fatalf("%q: reply = %+v, want success", auth, reply)
		}
	}
}

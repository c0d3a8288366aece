package adapter

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
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

// A web page can make a browser post to the adapter by rebinding a name of
// its own to 127.0.0.1 (DNS rebinding); the browser then sends that name as
// the Host. Only loopback names are answered, on every endpoint, so the
// page never reaches a handler, with or without a bearer token configured.
func TestServer_RefusesAForeignHostOnEveryEndpoint(t *testing.T) {
	ran := make(chan string, 8)
	record := funcProvider(func(_ context.Context, task *provider.Task) (*provider.Result, error) {
		ran <- task.Request.TaskRunID
		return &provider.Result{Output: map[string]any{"text": "ran"}}, nil
	})
	for name, cfg := range map[string]Config{
		"without a token": {Provider: record},
		"with a token":    {Provider: record, AuthToken: "tok"},
	} {
		t.Run(name, func(t *testing.T) {
			_, ts := startServer(t, cfg)
			for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:18789", "192.0.2.7", "[2001:db8::1]:80", "localhost.attacker.example", "0.0.0.0:18789"} {
				for _, ep := range []struct{ method, path string }{{"GET", "/health"}, {"POST", "/run-task"}, {"POST", "/execute"}, {"GET", "/other"}} {
					req, err := http.NewRequestWithContext(t.Context(), ep.method, ts.URL+ep.path, strings.NewReader(taskBody("r")))
					if err != nil {
						t.Fatal(err)
					}
					req.Host = host
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer tok")
					status, msg := failureOf(t, do(req))
					if status != http.StatusForbidden || !strings.Contains(msg, "Host") {
						t.Errorf("%s %s with Host %q: %d %q, want 403 naming the Host", ep.method, ep.path, host, status, msg)
					}
				}
			}
			select {
			case id := <-ran:
				t.Fatalf("task %s ran for a foreign Host", id)
			default:
			}
		})
	}
}

func TestServer_AnswersLoopbackHosts(t *testing.T) {
	_, ts := startServer(t, Config{Provider: provider.Echo{}})
	_, port, _ := strings.Cut(strings.TrimPrefix(ts.URL, "http://"), ":")
	for _, host := range []string{"127.0.0.1:" + port, "127.0.0.1", "127.5.6.7:" + port, "localhost:" + port, "LocalHost", "[::1]:" + port, "[::1]"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/run-task", strings.NewReader(taskBody("r")))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		if reply := parseReply(t, do(req)); reply.Kind != adapterapi.KindSuccess {
			t.Errorf("Host %q: reply %+v, want success", host, reply)
		}
	}
}

// An adapter listening beyond loopback is reached by names and addresses
// of its own; its bearer token, which a web page cannot know, is what
// guards it there.
func TestServer_AllowRemoteAnswersAnyHostWithTheToken(t *testing.T) {
	_, ts := startServer(t, Config{Provider: provider.Echo{}, AllowRemote: true, AuthToken: "tok"})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/run-task", strings.NewReader(taskBody("r")))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "adapter.lan.example:18789"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tok")
	if reply := parseReply(t, do(req)); reply.Kind != adapterapi.KindSuccess {
		t.Fatalf("reply %+v, want success", reply)
	}
}

// do sends req and reads the whole response.
func do(req *http.Request) response {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

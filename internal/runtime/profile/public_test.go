package profile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runtime/profile"
)

func TestProfile_FormattingNeverShowsToken(t *testing.T) {
	p := sample("agent-1", "rt-1")
	file := profile.File{ActiveProfile: p.Name(), Profiles: map[string]profile.Profile{p.Name(): p}}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%20v"} {
		for what, v := range map[string]any{"value": p, "pointer": &p, "file": file, "slice": []profile.Profile{p}} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, token) {
				t.Errorf("%s of %s shows the token: %s", verb, what, out)
			}
		}
	}
	if s := p.String(); strings.Contains(s, token) || !strings.Contains(s, "agent-1") {
		t.Errorf("String() = %q", s)
	}
	if out := fmt.Sprintf("%+v", p); !strings.Contains(out, "AgentID:agent-1") || !strings.Contains(out, "HasRuntimeToken:true") {
		t.Errorf("%%+v lost the public fields: %s", out)
	}
}

func TestProfile_PublicViewHasNoToken(t *testing.T) {
	p := sample("agent-1", "rt-1")
	p.NATS.URL = "nats://user:pass@bus.example.test:4222"
	b, err := json.Marshal(p.Public())
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, secret := range []string{token, `"runtime_token"`, "pass"} {
		if strings.Contains(out, secret) {
			t.Errorf("public view contains %q: %s", secret, out)
		}
	}
	for _, want := range []string{`"profile_name":"agent-1/rt-1"`, `"api_base":"https://api.example.test"`, `"has_runtime_token":true`, `"type":"claude_cli"`} {
		if !strings.Contains(out, want) {
			t.Errorf("public view lacks %s: %s", want, out)
		}
	}
}

func TestProfile_SlogLogsPublicView(t *testing.T) {
	p := sample("agent-1", "rt-1")
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("paired", "profile", p)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("paired", "profile", p)
	if strings.Contains(buf.String(), token) {
		t.Fatalf("slog output shows the token: %s", buf.String())
	}
}

func TestFile_JSONKeepsTokenAsStorageFormat(t *testing.T) {
	p := sample("agent-1", "rt-1")
	b, err := json.Marshal(profile.File{Profiles: map[string]profile.Profile{p.Name(): p}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"runtime_token":"`+token+`"`) {
		t.Fatalf("storage format lacks the token: %s", b)
	}
}

package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/schemas"
)

// TestAPIDocs_ServedWithoutCredential: the platform serves its OpenAPI and
// AsyncAPI documents and every event schema, byte for byte as published in
// schemas/, to anyone; an unknown schema is a JSON 404.
func TestAPIDocs_ServedWithoutCredential(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	cases := map[string]string{
		"/openapi.json":                   schemas.OpenAPIFile,
		"/asyncapi.json":                  schemas.AsyncAPIFile,
		"/schemas/openapi.json":           schemas.OpenAPIFile,
		"/schemas/events/cloudevent.json": schemas.EnvelopeFile,
		"/schemas/events/defs.json":       schemas.EventDefsFile,
		"/schemas/" + schemas.EventDataFile(mesh.EventTaskRunCompleted): schemas.EventDataFile(mesh.EventTaskRunCompleted),
	}
	for _, name := range schemas.Files() {
		cases["/schemas/"+name] = name
	}
	for path, file := range cases {
		want, err := schemas.File(file)
		if err != nil {
			t.Fatal(err)
		}
		res := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path})
		res.Expect(t, http.StatusOK)
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/") || !strings.Contains(ct, "json") {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		if string(res.Body) != string(want) {
			t.Errorf("%s is not %s as published", path, file)
		}
	}
	for _, path := range []string{"/schemas/events/nothing.json", "/schemas/../go.mod", "/schemas/schemas.go"} {
		res := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path})
		if res.Status != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, res.Status)
			continue
		}
		res.Err(t)
	}
}

// TestEvents_CarryTheirDataSchema: every event names the schema of its data
// in dataschema, the same URL for every event of a type, and the platform
// serves that schema at /schemas/ plus the URL's path below the schemas'
// base.
func TestEvents_CarryTheirDataSchema(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	events := p.StreamEvents(t, url.Values{})
	agent := p.CreateAgent("schematic")
	rt, run := p.HeldRun(t, agent.ID, "work")
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{"output": map[string]any{"text": "done"}}).Expect(t, http.StatusOK)
	seen := map[string]bool{}
	events.Until(t, 20*time.Second, func(ev meshtest.Event) bool {
		var raw map[string]any
		if err := json.Unmarshal([]byte(ev.Raw), &raw); err != nil {
			t.Fatalf("event is not JSON: %v", err)
		}
		ds, _ := raw["dataschema"].(string)
		if want := bus.DataSchema(ev.Type); ds == "" || ds != want {
			t.Fatalf("%s has dataschema %q, want %q", ev.Type, ds, want)
		}
		if want := schemas.BaseURL + schemas.EventDataFile(ev.Type); ds != want {
			t.Fatalf("%s has dataschema %q, want the schema's $id %q", ev.Type, ds, want)
		}
		if !seen[ds] {
			seen[ds] = true
			path := "/schemas/" + strings.TrimPrefix(ds, schemas.BaseURL)
			res := p.Send(t, meshtest.Request{Method: http.MethodGet, Path: path})
			res.Expect(t, http.StatusOK)
			var doc struct {
				ID string `json:"$id"`
			}
			res.Decode(t, &doc)
			if doc.ID != ds {
				t.Fatalf("%s serves the schema %q, want %q", path, doc.ID, ds)
			}
		}
		return ev.Type == mesh.EventTaskRunCompleted
	})
	if len(seen) < 3 {
		t.Fatalf("saw the schemas of %d event types, want at least agent, runtime and task run events", len(seen))
	}
}

package schemas_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/bus"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/schemas"
)

// TestCatalog_EveryEventTypeHasASchemaAMessageAndAPublisher: the event
// catalog, the data schemas and the AsyncAPI document list the same types,
// and each AsyncAPI message points at its type's schema.
func TestCatalog_EveryEventTypeHasASchemaAMessageAndAPublisher(t *testing.T) {
	v, err := schemas.Events()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := schemas.AsyncAPI()
	if err != nil {
		t.Fatal(err)
	}
	publishers, err := schemas.Publishers()
	if err != nil {
		t.Fatal(err)
	}
	catalog := map[string]mesh.EventKind{}
	for _, e := range mesh.EventCatalog {
		catalog[e.Type] = e.Kind
	}
	if len(v.Types()) != len(catalog) || len(publishers) != len(catalog) || len(doc.Components.Messages) != len(catalog) {
		t.Fatalf("%d schemas, %d published types, %d messages; the catalog has %d types", len(v.Types()), len(publishers), len(doc.Components.Messages), len(catalog))
	}
	for _, typ := range v.Types() {
		if _, ok := catalog[typ]; !ok {
			t.Errorf("schema for %s, which is not in the catalog", typ)
		}
	}
	for name, m := range doc.Components.Messages {
		kind, ok := catalog[m.Name]
		if !ok {
			t.Errorf("message %s is %q, not a catalog type", name, m.Name)
			continue
		}
		if m.Payload.Ref != schemas.EventDataFile(m.Name) {
			t.Errorf("message %s payload %s, want %s", name, m.Payload.Ref, schemas.EventDataFile(m.Name))
		}
		if _, err := schemas.File(m.Payload.Ref); err != nil {
			t.Errorf("message %s: %v", name, err)
		}
		if publishers[m.Name] == "" {
			t.Errorf("nobody publishes %s", m.Name)
		}
		found := false
		for _, ch := range doc.Channels {
			if _, ok := ch.Messages[name]; ok {
				found = true
				want := bus.EventSubject("{agentId}", string(kind), "")
				if !strings.HasPrefix(ch.Address, want+"{") {
					t.Errorf("%s is on channel %s, want %s{id}", m.Name, ch.Address, want)
				}
			}
		}
		if !found {
			t.Errorf("message %s is on no channel", name)
		}
	}
}

// TestEvents_SchemasRejectDrift: the schemas are strict enough to catch an
// event whose shape changed.
func TestEvents_SchemasRejectDrift(t *testing.T) {
	v, err := schemas.Events()
	if err != nil {
		t.Fatal(err)
	}
	run := map[string]any{
		"task_run_id": "01a1ff9a-1029-74a2-afd2-6cce082267ce", "conversation_id": "01a1ff9a-1029-74a2-afd2-6cce082267cf",
		"workspace_id": "01a1ff9a-1029-74a2-afd2-6cce082267d0", "task_type": "chat", "input": map[string]any{"text": "x"},
		"target_agent_id": "01a1ff9a-1029-74a2-afd2-6cce082267d1", "status": "completed", "attempt": 1, "max_attempts": 1,
		"output": map[string]any{"text": "y"}, "created_at": "2026-01-02T03:04:05Z", "updated_at": "2026-01-02T03:04:06.5Z",
		"ended_at": "2026-01-02T03:04:06.5Z", "revision": 7,
	}
	event := func(mutate func(e, data map[string]any)) []byte {
		data := map[string]any{}
		for k, v := range run {
			data[k] = v
		}
		e := map[string]any{
			"specversion": "1.0", "id": "x.7", "source": "urn:a2amesh:taskqueue", "type": mesh.EventTaskRunCompleted,
			"subject": run["task_run_id"], "time": "2026-01-02T03:04:06.5Z", "datacontenttype": "application/json",
			"dataschema": "https://a2amesh.dev/schemas/events/task_run.completed.json",
			"agentid":    run["target_agent_id"], "sequence": "00000000000000000007", "data": data,
		}
		mutate(e, data)
		b, _ := json.Marshal(e)
		return b
	}
	if err := v.Validate(event(func(map[string]any, map[string]any) {})); err != nil {
		t.Fatalf("a valid event was refused: %v", err)
	}
	for name, mutate := range map[string]func(e, data map[string]any){
		"unknown data field":       func(_, d map[string]any) { d["new_field"] = 1 },
		"missing required field":   func(_, d map[string]any) { delete(d, "revision") },
		"status of another type":   func(_, d map[string]any) { d["status"] = "running" },
		"completed without output": func(_, d map[string]any) { delete(d, "output") },
		"bad time":                 func(_, d map[string]any) { d["created_at"] = "yesterday" },
		"unknown type":             func(e, _ map[string]any) { e["type"] = "dev.a2amesh.task_run.exploded" },
		"wrong publisher":          func(e, _ map[string]any) { e["source"] = "urn:a2amesh:agents" },
		"unknown attribute":        func(e, _ map[string]any) { e["priority"] = "high" },
		"bad sequence":             func(e, _ map[string]any) { e["sequence"] = "7" },
		"missing agentid":          func(e, _ map[string]any) { delete(e, "agentid") },
		"missing dataschema":       func(e, _ map[string]any) { delete(e, "dataschema") },
		"another type's dataschema": func(e, _ map[string]any) {
			e["dataschema"] = "https://a2amesh.dev/schemas/events/task_run.failed.json"
		},
	} {
		if err := v.Validate(event(mutate)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestDocuments_AreValidJSONAndCompile: every embedded document parses, and
// the OpenAPI document's schemas compile (references resolve).
func TestDocuments_AreValidJSONAndCompile(t *testing.T) {
	c, err := schemas.NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := schemas.File(schemas.OpenAPIFile)
	var doc struct {
		OpenAPI    string `json:"openapi"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi.json: %v (version %q)", err, doc.OpenAPI)
	}
	for name := range doc.Components.Schemas {
		if _, err := c.Compile(schemas.BaseURL + schemas.OpenAPIFile + "#/components/schemas/" + name); err != nil {
			t.Errorf("components.schemas.%s: %v", name, err)
		}
	}
}

// TestDataSchema_IsTheIDOfEachTypesSchema: the dataschema every event
// carries (bus.DataSchema) is the $id of its type's data schema, and the
// base is the documents' base.
func TestDataSchema_IsTheIDOfEachTypesSchema(t *testing.T) {
	if bus.DataSchemaBase != schemas.BaseURL {
		t.Fatalf("bus.DataSchemaBase %s, schemas.BaseURL %s", bus.DataSchemaBase, schemas.BaseURL)
	}
	for _, e := range mesh.EventCatalog {
		b, err := schemas.File(schemas.EventDataFile(e.Type))
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		var doc struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if got := bus.DataSchema(e.Type); got != doc.ID {
			t.Errorf("%s: dataschema %s, the schema's $id is %s", e.Type, got, doc.ID)
		}
	}
}

// TestRegion_SchemaAcceptsTheNamesTheBusDoes: the Region definition of the
// schemas and bus.ValidRegion agree on which names are regions.
func TestRegion_SchemaAcceptsTheNamesTheBusDoes(t *testing.T) {
	c, err := schemas.NewCompiler()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schemas.BaseURL + "events/defs.json#/$defs/Region")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		bus.DefaultRegion, "east", "us-west-2", "a", "a1", strings.Repeat("x", bus.MaxRegionLen),
		"", "East", "1east", "east-", "-east", "us_west", "us.west", "eu west", strings.Repeat("x", bus.MaxRegionLen+1),
	} {
		busOK := bus.ValidRegion(name) == nil
		schemaOK := sch.Validate(name) == nil
		if busOK != schemaOK {
			t.Errorf("region %q: bus says valid=%v, the schema says valid=%v", name, busOK, schemaOK)
		}
	}
	if bus.ValidRegion("east") != nil || bus.ValidRegion("East") == nil {
		t.Fatal("bus.ValidRegion refuses east or accepts East")
	}
}

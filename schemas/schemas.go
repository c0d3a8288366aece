// Package schemas holds A2A Mesh's protocol contracts as JSON documents: a
// JSON Schema for the data of every CloudEvent type (events/), the structured
// CloudEvent envelope, the AsyncAPI 3 document of the bus subjects and the
// OpenAPI 3.1 document of the HTTP API. The files are embedded so tests (and
// consumers who import this package) validate real events and answers
// against exactly what is published.
package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed events/*.json openapi.json asyncapi.json
var files embed.FS

// BaseURL is the $id base of every document; relative references between
// the files resolve against it, never over the network.
const BaseURL = "https://a2amesh.dev/schemas/"

// Paths of the documents inside the package.
const (
	OpenAPIFile    = "openapi.json"
	AsyncAPIFile   = "asyncapi.json"
	EnvelopeFile   = "events/cloudevent.json"
	EventDefsFile  = "events/defs.json"
	eventTypeStart = "dev.a2amesh."
)

// File returns an embedded document by its path (e.g. "openapi.json").
func File(name string) ([]byte, error) { return files.ReadFile(name) }

// Files lists the paths of every embedded document.
func Files() []string {
	var out []string
	_ = fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// EventDataFile is the path of the schema of an event type's data:
// events/<kind>.<verb>.json for dev.a2amesh.<kind>.<verb>.
func EventDataFile(eventType string) string {
	return "events/" + strings.TrimPrefix(eventType, eventTypeStart) + ".json"
}

// NewCompiler returns a JSON Schema compiler that knows every embedded
// document under BaseURL and asserts formats (date-time and the like), so a
// schema may reference any other document by relative URL.
func NewCompiler() (*jsonschema.Compiler, error) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	c.DefaultDraft(jsonschema.Draft2020)
	for _, name := range Files() {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", name, err)
		}
		if err := c.AddResource(BaseURL+name, doc); err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", name, err)
		}
	}
	return c, nil
}

// EventValidator checks structured-mode CloudEvents against the envelope
// schema and the schema of their type's data.
type EventValidator struct {
	envelope *jsonschema.Schema
	data     map[string]*jsonschema.Schema
	// publisher is the service the AsyncAPI document says sends each type.
	publisher map[string]string
}

var events = sync.OnceValues(compileEvents)

// Events returns the event validator (compiled once).
func Events() (*EventValidator, error) { return events() }

func compileEvents() (*EventValidator, error) {
	c, err := NewCompiler()
	if err != nil {
		return nil, err
	}
	v := &EventValidator{data: map[string]*jsonschema.Schema{}}
	if v.publisher, err = Publishers(); err != nil {
		return nil, err
	}
	if v.envelope, err = c.Compile(BaseURL + EnvelopeFile); err != nil {
		return nil, fmt.Errorf("schemas: envelope: %w", err)
	}
	entries, err := fs.ReadDir(files, "events")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := "events/" + e.Name()
		if name == EnvelopeFile || name == EventDefsFile {
			continue
		}
		s, err := c.Compile(BaseURL + name)
		if err != nil {
			return nil, fmt.Errorf("schemas: %s: %w", name, err)
		}
		v.data[eventTypeStart+strings.TrimSuffix(path.Base(name), ".json")] = s
	}
	return v, nil
}

// Types lists the event types that have a data schema.
func (v *EventValidator) Types() []string {
	out := make([]string, 0, len(v.data))
	for t := range v.data {
		out = append(out, t)
	}
	return out
}

// Validate checks one structured-mode CloudEvent (JSON).
func (v *EventValidator) Validate(structured []byte) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(structured))
	if err != nil {
		return fmt.Errorf("event is not JSON: %w", err)
	}
	if err := v.envelope.Validate(doc); err != nil {
		return fmt.Errorf("event envelope: %w", err)
	}
	var head struct {
		Type       string          `json:"type"`
		Source     string          `json:"source"`
		DataSchema string          `json:"dataschema"`
		Data       json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(structured, &head); err != nil {
		return err
	}
	if want := BaseURL + EventDataFile(head.Type); head.DataSchema != want {
		return fmt.Errorf("%s names dataschema %s, its schema is %s", head.Type, head.DataSchema, want)
	}
	if want := "urn:a2amesh:" + v.publisher[head.Type]; head.Source != want {
		return fmt.Errorf("%s published by %s, the AsyncAPI document says %s", head.Type, head.Source, want)
	}
	return v.ValidateData(head.Type, head.Data)
}

// ValidateData checks the data of an event of the given type.
func (v *EventValidator) ValidateData(eventType string, data []byte) error {
	s, ok := v.data[eventType]
	if !ok {
		return fmt.Errorf("event type %q has no schema", eventType)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s data is not JSON: %w", eventType, err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("%s data: %w", eventType, err)
	}
	return nil
}

// AsyncAPIDoc is the part of the AsyncAPI document the code reads.
type AsyncAPIDoc struct {
	Operations map[string]struct {
		Action   string `json:"action"`
		Service  string `json:"x-service"`
		Messages []struct {
			Ref string `json:"$ref"`
		} `json:"messages"`
	} `json:"operations"`
	Channels map[string]struct {
		Address  string                     `json:"address"`
		Messages map[string]json.RawMessage `json:"messages"`
	} `json:"channels"`
	Components struct {
		Messages map[string]struct {
			Name    string `json:"name"`
			Payload struct {
				Ref string `json:"$ref"`
			} `json:"payload"`
		} `json:"messages"`
	} `json:"components"`
}

// Publishers maps each event type to the service that sends it, as the
// AsyncAPI document declares ("send" operations with x-service).
func Publishers() (map[string]string, error) {
	doc, err := AsyncAPI()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, op := range doc.Operations {
		if op.Action != "send" {
			continue
		}
		for _, m := range op.Messages {
			msg := m.Ref[strings.LastIndexByte(m.Ref, '/')+1:]
			typ := doc.Components.Messages[msg].Name
			if typ == "" {
				return nil, fmt.Errorf("schemas: operation %s sends unknown message %s", name, msg)
			}
			out[typ] = op.Service
		}
	}
	return out, nil
}

// AsyncAPI parses the AsyncAPI document.
func AsyncAPI() (*AsyncAPIDoc, error) {
	b, err := files.ReadFile(AsyncAPIFile)
	if err != nil {
		return nil, err
	}
	var doc AsyncAPIDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("schemas: %s: %w", AsyncAPIFile, err)
	}
	return &doc, nil
}

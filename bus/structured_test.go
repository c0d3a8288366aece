package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/nats-io/nats.go"
)

// sdkStructured is what GET /events sent before the direct encoding: the
// SDK's event, encoded by encoding/json.
func sdkStructured(t testing.TB, msg *nats.Msg) ([]byte, bool) {
	t.Helper()
	ev, err := DecodeEvent(context.Background(), msg)
	if err != nil {
		return nil, false
	}
	body, err := json.Marshal(ev)
	return body, err == nil
}

// copyMsg is msg with its own headers, for a case to change.
func copyMsg(msg *nats.Msg) *nats.Msg {
	c := nats.NewMsg(msg.Subject)
	for k, v := range msg.Header {
		c.Header[k] = append([]string(nil), v...)
	}
	c.Data = append([]byte(nil), msg.Data...)
	return c
}

// Every event the platform's publishers write is encoded directly, and
// the bytes are the SDK's; an event of another shape goes through the SDK
// and comes out as before.
func TestEncodeStructured_IsWhatTheSDKWrites(t *testing.T) {
	ctx := WithTraceParent(context.Background(), benchTraceParent)
	p := NewPublisher(nil, ServiceTaskQueue)
	published, err := p.encode(ctx, Event{Type: mesh.EventTaskRunCompleted, Kind: mesh.KindTaskRun, AgentID: "agt_1",
		Subject: "run_1", ID: "run_1-3", Sequence: 3, Time: time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC),
		Data: map[string]any{"task_run_id": "run_1", "output": map[string]any{"text": "a b\tc é"}}})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := NewPublisher(nil, ServiceAgents).encode(context.Background(), Event{Type: mesh.EventAgentCreated,
		Kind: mesh.KindAgent, AgentID: "agt_2", Data: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		msg    *nats.Msg
		direct bool
	}{
		{"a run's event", published, true},
		{"an event without subject, sequence or trace", bare, true},
	}
	change := func(name string, direct bool, edit func(m *nats.Msg)) {
		m := copyMsg(published)
		edit(m)
		cases = append(cases, struct {
			name   string
			msg    *nats.Msg
			direct bool
		}{name, m, direct})
	}
	change("data with spaces between tokens", true, func(m *nats.Msg) { m.Data = []byte("{ \"a\" : [1, 2] }\n") })
	change("no data", true, func(m *nats.Msg) { m.Data = nil })
	change("an extension of another publisher", true, func(m *nats.Msg) { m.Header.Set("ce-zone", "eu1") })
	change("data that encoding/json escapes", false, func(m *nats.Msg) { m.Data = []byte(`{"html":"<b>&</b>"}`) })
	change("data that is not JSON", false, func(m *nats.Msg) { m.Data = []byte(`{"a":`) })
	change("an attribute that needs escaping", false, func(m *nats.Msg) { m.Header.Set("ce-subject", "run \"1\"") })
	change("non-ASCII text", false, func(m *nats.Msg) { m.Header.Set("ce-subject", "exécution") })
	change("a time not in UTC", false, func(m *nats.Msg) { m.Header.Set("ce-time", "2026-11-29T13:00:00+01:00") })
	change("a time that is not one", false, func(m *nats.Msg) { m.Header.Set("ce-time", "yesterday") })
	change("a source the SDK rewrites", false, func(m *nats.Msg) { m.Header.Set("ce-source", "HTTP://Example.com/%7e") })
	change("another content type", false, func(m *nats.Msg) { m.Header.Set("content-type", "text/plain") })
	change("another spec version", false, func(m *nats.Msg) {
		m.Header.Set("ce-specversion", "0.3")
		m.Header.Del("ce-dataschema") // 0.3 has none
	})
	change("a header in capitals", false, func(m *nats.Msg) { m.Header["Ce-Zone"] = []string{"eu1"} })
	change("an extension name the SDK refuses", false, func(m *nats.Msg) { m.Header.Set("ce-a_b", "x") })
	change("no id", false, func(m *nats.Msg) { m.Header.Del("ce-id") })
	change("a structured event", false, func(m *nats.Msg) {
		body, _ := sdkStructured(t, published)
		m.Header = nats.Header{"content-type": []string{"application/cloudevents+json"}}
		m.Data = body
	})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, direct := encodeStructuredDirect(c.msg); direct != c.direct {
				t.Errorf("encoded directly: %v, want %v", direct, c.direct)
			}
			want, ok := sdkStructured(t, c.msg)
			got, err := EncodeStructured(context.Background(), c.msg)
			if (err == nil) != ok {
				t.Fatalf("EncodeStructured error %v; the SDK's encoding ok: %v", err, ok)
			}
			if !bytes.Equal(got.Body, want) {
				t.Fatalf("EncodeStructured:\n got %s\nwant %s", got.Body, want)
			}
			if !ok {
				return
			}
			ev, _ := DecodeEvent(context.Background(), c.msg)
			if got.Type != ev.Type() || !bytes.Equal(got.Data, ev.Data()) {
				t.Fatalf("type %q data %s, want %q %s", got.Type, got.Data, ev.Type(), ev.Data())
			}
		})
	}
}

func FuzzEncodeStructured(f *testing.F) {
	f.Add("run_1-3", "urn:a2amesh:taskqueue", "dev.a2amesh.task_run.completed", "run_1", "2026-11-29T12:00:00.123456789Z",
		"https://a2amesh.dev/schemas/events/task_run.completed.json", "sequence", "00000000000000000003", []byte(`{"a":"b c"}`))
	f.Add("", "HTTP://x/%7e", "t", "", "2026-11-29T13:00:00+01:00", "", "a_b", "\x00", []byte(`{ "a" : 1 }`))
	f.Fuzz(func(t *testing.T, id, source, typ, subject, ts, schema, extName, extValue string, data []byte) {
		m := nats.NewMsg("mesh.events.x")
		m.Header.Set("ce-specversion", "1.0")
		m.Header.Set("content-type", "application/json")
		for k, v := range map[string]string{"ce-id": id, "ce-source": source, "ce-type": typ, "ce-subject": subject,
			"ce-time": ts, "ce-dataschema": schema, "ce-" + extName: extValue} {
			if v != "" {
				m.Header[k] = []string{v}
			}
		}
		m.Data = data
		got, direct := encodeStructuredDirect(m)
		if !direct {
			return
		}
		want, ok := sdkStructured(t, m)
		if !ok || !bytes.Equal(got.Body, want) {
			t.Fatalf("direct encoding:\n got %s\nwant %s (the SDK's encoding ok: %v)", got.Body, want, ok)
		}
	})
}

// BenchmarkEncodeStructured compares the direct encoding of a run's event
// with the SDK's decoding and encoding/json's encoding.
func BenchmarkEncodeStructured(b *testing.B) {
	msg, err := NewPublisher(nil, ServiceTaskQueue).encode(WithTraceParent(context.Background(), benchTraceParent),
		Event{Type: mesh.EventTaskRunCompleted, Kind: mesh.KindTaskRun, AgentID: "agt_1", Subject: "run_1", ID: "run_1-3",
			Sequence: 3, Data: map[string]any{"task_run_id": "run_1", "status": "completed", "output": map[string]any{"text": "hello"}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := encodeStructuredDirect(msg); !ok {
				b.Fatal("not encoded directly")
			}
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := sdkStructured(b, msg); !ok {
				b.Fatal("not encoded")
			}
		}
	})
}

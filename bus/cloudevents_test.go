package bus

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
)

// TestDecodeEvent_ReadsWhatPublishersEncode round-trips a service event
// through the binary-mode NATS encoding every consumer (SSE, events tail)
// decodes.
func TestDecodeEvent_ReadsWhatPublishersEncode(t *testing.T) {
	p := &Publisher{source: "urn:a2amesh:taskqueue"}
	run := mesh.TaskRun{ID: mesh.NewID(), TargetAgentID: mesh.NewID(), Status: mesh.StatusRunning, Attempt: 2}
	when := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	ctx := WithTraceParent(context.Background(), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	msg, err := p.encode(ctx, Event{
		Type: mesh.EventTaskRunClaimed, Kind: mesh.KindTaskRun, AgentID: run.TargetAgentID, Subject: run.ID,
		ID: run.ID + ".7", Sequence: 7, Data: run, Time: when,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := EventSubject(run.TargetAgentID, string(mesh.KindTaskRun), run.ID); msg.Subject != want {
		t.Fatalf("subject %s, want %s", msg.Subject, want)
	}
	e, err := DecodeEvent(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"id":          {e.ID(), run.ID + ".7"},
		"type":        {e.Type(), mesh.EventTaskRunClaimed},
		"source":      {e.Source(), "urn:a2amesh:taskqueue"},
		"subject":     {e.Subject(), run.ID},
		"specversion": {e.SpecVersion(), "1.0"},
		"content":     {e.DataContentType(), event.ApplicationJSON},
		"sequence":    {asString(e.Extensions()["sequence"]), "00000000000000000007"},
		"agentid":     {asString(e.Extensions()["agentid"]), run.TargetAgentID},
		"traceparent": {asString(e.Extensions()["traceparent"]), TraceParent(ctx)},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: %q, want %q", name, c[0], c[1])
		}
	}
	if !e.Time().Equal(when) {
		t.Errorf("time %s, want %s", e.Time(), when)
	}
	var got mesh.TaskRun
	if err := json.Unmarshal(e.Data(), &got); err != nil || got.ID != run.ID || got.Attempt != 2 || got.Status != mesh.StatusRunning {
		t.Fatalf("data: %s (%v)", e.Data(), err)
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("decoded event is not valid: %v", err)
	}
}

// TestDecodeEvent_StructuredAndForeignMessages: a structured-mode JSON event
// decodes too; a message that is no CloudEvent is an error, not a panic.
func TestDecodeEvent_StructuredAndForeignMessages(t *testing.T) {
	structured := &nats.Msg{Subject: "mesh.evt.a.task_run.r", Header: nats.Header{"content-type": {"application/cloudevents+json"}},
		Data: []byte(`{"specversion":"1.0","id":"1","source":"urn:x","type":"dev.a2amesh.task_run.created","data":{"k":"v"}}`)}
	e, err := DecodeEvent(context.Background(), structured)
	if err != nil || e.ID() != "1" || e.Type() != mesh.EventTaskRunCreated || string(e.Data()) != `{"k":"v"}` {
		t.Fatalf("structured event: %+v, %v", e, err)
	}
	for name, msg := range map[string]*nats.Msg{
		"no headers":         {Subject: "x", Data: []byte(`{"a":1}`)},
		"bad spec version":   {Subject: "x", Header: nats.Header{"ce-specversion": {"9.9"}, "ce-id": {"1"}}},
		"broken structured":  {Subject: "x", Header: nats.Header{"content-type": {"application/cloudevents+json"}}, Data: []byte(`{`)},
		"binary, no type":    {Subject: "x", Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"1"}, "ce-source": {"urn:x"}}},
		"binary, empty id":   {Subject: "x", Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {""}, "ce-source": {"urn:x"}, "ce-type": {"t"}}},
		"binary, bad time":   {Subject: "x", Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"1"}, "ce-source": {"urn:x"}, "ce-type": {"t"}, "ce-time": {"noon"}}},
		"binary, bad source": {Subject: "x", Header: nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"1"}, "ce-source": {"%zz"}, "ce-type": {"t"}}},
	} {
		if e, err := DecodeEvent(context.Background(), msg); err == nil && e.Validate() == nil {
			t.Errorf("%s: decoded as a valid event: %+v", name, e)
		}
	}
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// FuzzDecodeEvent feeds arbitrary binary-mode headers and bodies to the
// decoder every event consumer uses. It must never panic; an event it decodes
// and that validates must survive re-encoding unchanged.
func FuzzDecodeEvent(f *testing.F) {
	f.Add("1.0", "r.7", "urn:a2amesh:taskqueue", mesh.EventTaskRunClaimed, "r", "application/json", "2030-01-02T03:04:05Z", "00000000000000000007", []byte(`{"task_run_id":"r"}`))
	f.Add("1.0", "x", "urn:x", "t", "", "", "", "", []byte(nil))
	f.Add("0.3", "x", "urn:x", "t", "s", "text/plain", "", "", []byte("hello"))
	f.Add("1.0", "", "%zz", "", "", "application/cloudevents+json", "noon", "-1", []byte(`{`))
	f.Add("", "x", "urn:x", "t", "s", "application/cloudevents+json", "", "", []byte(`{"specversion":"1.0","id":"1","source":"urn:x","type":"t"}`))
	f.Fuzz(func(t *testing.T, specversion, id, source, typ, subject, contentType, when, sequence string, data []byte) {
		h := nats.Header{}
		for k, v := range map[string]string{"ce-specversion": specversion, "ce-id": id, "ce-source": source, "ce-type": typ,
			"ce-subject": subject, "content-type": contentType, "ce-time": when, "ce-sequence": sequence} {
			if v != "" {
				h.Set(k, v)
			}
		}
		e, err := DecodeEvent(context.Background(), &nats.Msg{Subject: "mesh.evt.a.task_run.r", Header: h, Data: data})
		if err != nil {
			if !strings.Contains(err.Error(), "decode cloudevent") {
				t.Fatalf("error lacks context: %v", err)
			}
			return
		}
		if e.Validate() != nil {
			return
		}
		msg, err := EncodeEvent(context.Background(), e, "mesh.evt.a.task_run.r")
		if err != nil {
			return
		}
		again, err := DecodeEvent(context.Background(), msg)
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v", err)
		}
		if again.ID() != e.ID() || again.Type() != e.Type() || again.Source() != e.Source() || again.Subject() != e.Subject() ||
			string(again.Data()) != string(e.Data()) || !again.Time().Equal(e.Time()) || again.DataContentType() != e.DataContentType() {
			t.Fatalf("round trip changed the event:\n%v\n%v", e, again)
		}
	})
}

// TestTaskRunOf_TakesTheRevisionFromTheSequence: a consumer reading a run off
// its event sees the revision of the write the event announces, and the type
// without decoding the event.
func TestTaskRunOf_TakesTheRevisionFromTheSequence(t *testing.T) {
	p := &Publisher{source: "urn:a2amesh:taskqueue"}
	run := mesh.TaskRun{ID: mesh.NewID(), TargetAgentID: mesh.NewID(), Status: mesh.StatusRunning, Revision: 6}
	msg, err := p.encode(context.Background(), Event{
		Type: mesh.EventTaskRunClaimed, Kind: mesh.KindTaskRun, AgentID: run.TargetAgentID, Subject: run.ID, Sequence: 7, Data: run,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := EventType(msg.Header); got != mesh.EventTaskRunClaimed {
		t.Errorf("type %q, want %q", got, mesh.EventTaskRunClaimed)
	}
	got, err := TaskRunOf(msg.Header, msg.Data)
	if err != nil || got.ID != run.ID || got.Revision != 7 {
		t.Fatalf("run %+v, %v; want %s at revision 7", got, err, run.ID)
	}
	if _, err := TaskRunOf(msg.Header, []byte(`{`)); err == nil {
		t.Error("undecodable data read as a run")
	}
}

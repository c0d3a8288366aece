package adapterclient

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
)

// FuzzReadStream: whatever a local adapter streams back, the runtime ends
// with a reply or a Failure with one of the contract's codes, never a panic
// or another kind of error; progress lines are only those the stream sent.
func FuzzReadStream(f *testing.F) {
	for _, seed := range []string{
		`{"type":"progress","message":"half","percent":50}` + "\n" + `{"type":"result","result":{"success":true,"output":{"text":"hi"}}}`,
		`{"type":"result","result":{"success":false,"error":{"message":"no"}}}`,
		`{"type":"result","result":[1,2]}`,
		`{"type":"result","result":"text"}`,
		"not json\n",
		`{"type":"progress"}`,
		"",
		"\n\n\n",
	} {
		f.Add([]byte(seed))
	}
	codes := map[string]bool{mesh.ReasonAdapterInvalidJSON: true, mesh.ReasonAdapterInvalidResponse: true, mesh.ReasonAdapterConnectionLost: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &Client{}
		progress := 0
		reply, err := c.readStream(context.Background(), bytes.NewReader(data), func(adapterapi.StreamLine) { progress++ })
		if progress > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d progress lines from %d lines", progress, bytes.Count(data, []byte("\n"))+1)
		}
		if err == nil {
			if reply == nil {
				t.Fatal("no reply and no error")
			}
			return
		}
		var failure *Failure
		if !errors.As(err, &failure) || !codes[failure.Code] {
			t.Fatalf("error outside the contract: %T %v", err, err)
		}
	})
}

// BenchmarkReadStream reads the streamed answer of an echo adapter: a
// progress line and the result.
func BenchmarkReadStream(b *testing.B) {
	answer := []byte(`{"type":"progress","message":"working","percent":50}` + "\n" +
		`{"type":"result","result":{"success":true,"output":{"text":"an echo of the task's input text"}}}` + "\n")
	c := &Client{}
	b.ReportAllocs()
	for b.Loop() {
		reply, err := c.readStream(context.Background(), bytes.NewReader(answer), func(adapterapi.StreamLine) {})
		if err != nil || reply.Kind != adapterapi.KindSuccess {
			b.Fatalf("%+v, %v", reply, err)
		}
	}
}

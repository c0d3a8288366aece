package adapterclient

import (
	"bytes"
	"context"
	"errors"
	"github.com/a2amesh/a2amesh/mesh"
	"testing"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
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

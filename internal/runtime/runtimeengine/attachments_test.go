package runtimeengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/a2amesh/a2amesh/mesh"
)

// hasAttachmentsKey is what withAttachments looks for, found the long way:
// input decoded as an object with an "attachments" key.
func hasAttachmentsKey(input []byte) bool {
	var in map[string]json.RawMessage
	return json.Unmarshal(input, &in) == nil && in["attachments"] != nil
}

// TestMayHoldAttachments: the check that spares most inputs a decode
// passes every input that has the key, however the key is spelled.
func TestMayHoldAttachments(t *testing.T) {
	for _, c := range []struct {
		input string
		want  bool
	}{
		{`{"text":"hello"}`, false},
		{`{"text":"two\nlines"}`, true},
		{`{"attachments":[{"artifact_id":"a"}]}`, true},
		{`{"attachment\u0073":[{"artifact_id":"a"}]}`, true},
		{`{"text":"no attachments here"}`, true},
		{`{"Attachments":[]}`, false},
	} {
		if got := mayHoldAttachments(json.RawMessage(c.input)); got != c.want {
			t.Errorf("mayHoldAttachments(%s) = %v, want %v", c.input, got, c.want)
		}
	}
}

// FuzzMayHoldAttachments: no input with an "attachments" key is passed
// over.
func FuzzMayHoldAttachments(f *testing.F) {
	for _, s := range []string{`{"text":"hello"}`, `{"attachments":[]}`, `{"attachment\u0073":[1]}`, `{"\u0061ttachments":{}}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		if hasAttachmentsKey(input) && !mayHoldAttachments(input) {
			t.Fatalf("%q has an attachments key, and was passed over", input)
		}
	})
}

// noAttachments is an AttachmentReader for inputs that name none.
type noAttachments struct{}

func (noAttachments) ReadAttachment(context.Context, string) ([]byte, error) {
	return nil, errors.New("no attachment expected")
}

// BenchmarkWithAttachments: what preparing an input without attachments
// costs a run, for a short task and a long one.
func BenchmarkWithAttachments(b *testing.B) {
	e := &Engine{cfg: Config{Attachments: noAttachments{}}}
	run := &mesh.TaskRun{ID: mesh.NewID()}
	for _, size := range []int{64, 256 << 10} {
		input, _ := json.Marshal(map[string]any{"text": strings.Repeat("The quick brown fox jumps over the lazy dog. ", size/45+1), "context": map[string]any{"language": "en", "tags": []string{"one", "two"}}})
		b.Run(fmt.Sprintf("%dB", len(input)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.withAttachments(context.Background(), run, input); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

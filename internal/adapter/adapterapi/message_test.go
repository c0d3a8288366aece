package adapterapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestMessage_ATextOnlyMessageIsStoredOnceAndReachesTheAdapterWhole: a
// message whose only part is its text carries that text once in a run's
// input (as input.text), and the adapter still reads the whole message.
func TestMessage_ATextOnlyMessageIsStoredOnceAndReachesTheAdapterWhole(t *testing.T) {
	const text = "book a table for four"
	m := &Message{MessageID: "m1", Role: "user", Parts: []Part{{Kind: PartText, Text: text}}}
	m.Compact()
	input, err := json.Marshal(map[string]any{"text": text, "message": m})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(input), text); n != 1 {
		t.Fatalf("the input carries the text %d times: %s", n, input)
	}
	got := (&RunTaskRequest{Input: input}).InputMessage()
	if got == nil || got.MessageID != "m1" || len(got.Parts) != 1 || got.Parts[0].Kind != PartText || got.Parts[0].Text != text {
		t.Fatalf("the adapter reads the message as %+v", got)
	}

	// A message of several parts keeps them all.
	multi := &Message{Parts: []Part{{Kind: PartText, Text: "a"}, {Kind: PartData, Data: map[string]any{"n": 1}}}}
	multi.Compact()
	if len(multi.Parts) != 2 {
		t.Fatalf("a message of two parts was compacted to %+v", multi.Parts)
	}
}

package provider

import (
	"context"
	"testing"
)

func TestEcho_ReturnsTheInputText(t *testing.T) {
	task := newTestTask(t, t.TempDir(), "conv", "run", "ping")
	res, err := Echo{}.Run(context.Background(), task, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Output["text"] != "ping" || len(res.Output) != 1 {
		t.Fatalf("output = %v, want {text: ping}", res.Output)
	}
}

func TestEcho_AllocatesOnlyTheReply(t *testing.T) {
	task := newTestTask(t, t.TempDir(), "conv", "run", "ping")
	ctx := context.Background()
	// The Result, its map and the text boxed into the map.
	const replyAllocs = 3
	if n := testing.AllocsPerRun(100, func() { _, _ = Echo{}.Run(ctx, task, nil) }); n > replyAllocs {
		t.Fatalf("Echo.Run allocates %v times, want at most %d", n, replyAllocs)
	}
}

package runtimeengine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestCanceledRuns_NamesARunCanceledBeforeItWasAskedAbout(t *testing.T) {
	c := newCanceledRuns()
	c.add("early")
	c.add("other")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The first wait takes what was heard since; a later one still names
	// a run asked about that was canceled before.
	if got, err := c.wait(ctx, nil); err != nil || !slices.Equal(got, []string{"early", "other"}) {
		t.Fatalf("first wait: %v, %v; want what was heard", got, err)
	}
	if got, err := c.wait(ctx, []string{"held", "early"}); err != nil || !slices.Equal(got, []string{"early"}) {
		t.Fatalf("asked about a run canceled before: %v, %v", got, err)
	}
}

func TestCanceledRuns_AWaitEndsWhenARunIsCanceledOrItsContextEnds(t *testing.T) {
	c := newCanceledRuns()
	got := make(chan []string, 1)
	go func() {
		ids, _ := c.wait(context.Background(), []string{"held"})
		got <- ids
	}()
	// A run claimed after the wait began is named too.
	c.add("claimed meanwhile")
	select {
	case ids := <-got:
		if !slices.Equal(ids, []string{"claimed meanwhile"}) {
			t.Fatalf("named %v", ids)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end when a run was canceled")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ids, err := c.wait(ctx, []string{"held"}); err == nil || ids != nil {
		t.Fatalf("a wait whose context ended: %v, %v", ids, err)
	}
}

func TestCanceledRuns_RemembersABoundedNumber(t *testing.T) {
	c := newCanceledRuns()
	for i := range 3 * maxCanceledKept {
		c.add(fmt.Sprint("run-", i))
	}
	if len(c.known) != maxCanceledKept || len(c.order) != maxCanceledKept || len(c.fresh) != maxCanceledKept {
		t.Fatalf("kept %d known, %d in order, %d fresh; want at most %d", len(c.known), len(c.order), len(c.fresh), maxCanceledKept)
	}
	newest := fmt.Sprint("run-", 3*maxCanceledKept-1)
	if !c.known[newest] || c.known["run-0"] {
		t.Fatal("the newest must be kept, the oldest forgotten")
	}
}

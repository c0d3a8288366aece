package runfollow_test

import (
	"context"
	"errors"
	"testing"

	"github.com/a2amesh/a2amesh/internal/runfollow"
)

func TestFeed_SendsEachItemInOrderAndClosesWhenNextFails(t *testing.T) {
	n := 0
	items := runfollow.Feed(context.Background(), func(context.Context) (int, error) {
		if n == 3 {
			return 0, errors.New("done")
		}
		n++
		return n, nil
	})
	var got []int
	for item := range items {
		got = append(got, item)
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("fed %v, want [1 2 3]", got)
	}
}

func TestFeed_ClosesWhenTheContextEndsWhileAnItemWaits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	handed := make(chan struct{})
	items := runfollow.Feed(ctx, func(context.Context) (string, error) {
		select {
		case handed <- struct{}{}:
		default:
		}
		return "item", nil
	})
	<-handed // the feed holds an item nobody reads
	cancel()
	for range items {
	}
}

package runfollow

import "context"

// Feed calls next again and again on a goroutine of its own and sends each
// item it returns on the channel Feed returns, until next fails or ctx
// ends; then it closes the channel. A stream's writer selects on it beside
// its keep-alive ticker, so a quiet follower never holds up the pings.
func Feed[T any](ctx context.Context, next func(context.Context) (T, error)) <-chan T {
	items := make(chan T)
	go func() {
		defer close(items)
		for {
			item, err := next(ctx)
			if err != nil {
				return
			}
			select {
			case items <- item:
			case <-ctx.Done():
				return
			}
		}
	}()
	return items
}

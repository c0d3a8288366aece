package taskqueue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

type page struct {
	TaskRuns   []mesh.TaskRun `json:"task_runs"`
	NextCursor string         `json:"next_cursor"`
}

// pageAll follows next_cursor from the first page to the last, calling
// between(n) after page n so a test can act while paging is under way.
func pageAll(t *testing.T, p *meshtest.Platform, q url.Values, between func(n int)) []mesh.TaskRun {
	t.Helper()
	var all []mesh.TaskRun
	cursor := ""
	for n := 1; ; n++ {
		qq := url.Values{}
		for k, v := range q {
			qq[k] = v
		}
		if cursor != "" {
			qq.Set("cursor", cursor)
		}
		var pg page
		p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?" + qq.Encode(), Owner: true}).Expect(t, http.StatusOK).Decode(t, &pg)
		if limit := q.Get("limit"); limit != "" && len(pg.TaskRuns) > atoi(limit) {
			t.Fatalf("page %d has %d runs, more than limit %s", n, len(pg.TaskRuns), limit)
		}
		all = append(all, pg.TaskRuns...)
		if pg.NextCursor == "" {
			return all
		}
		if len(pg.TaskRuns) == 0 || pg.NextCursor != pg.TaskRuns[len(pg.TaskRuns)-1].ID {
			t.Fatalf("page %d: next_cursor %q is not its last run", n, pg.NextCursor)
		}
		if n > 100 {
			t.Fatal("paging does not end")
		}
		if between != nil {
			between(n)
		}
		cursor = pg.NextCursor
	}
}

func atoi(s string) int {
	var n int
	_, _ = fmt.Sscan(s, &n)
	return n
}

// TestList_CursorPagingCoversEveryRunOnceNewestFirst pages through 1,000 runs
// of two agents, with and without filters, while new runs keep arriving.
func TestList_CursorPagingCoversEveryRunOnceNewestFirst(t *testing.T) {
	t.Parallel()
	p := meshtest.StartPlatform(t)
	a, b := p.CreateAgent("a"), p.CreateAgent("b")
	client := meshapi.NewClient(p.Conn().NC)
	ctx, cancelCtx := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancelCtx()

	// 1,000 runs from 8 concurrent creators: every fourth for b, every tenth canceled.
	const total = 1000
	var mu sync.Mutex
	created := map[string]mesh.TaskRun{}
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				target := a.ID
				if i%4 == 0 {
					target = b.ID
				}
				res, err := client.CreateTaskRun(ctx, meshapi.CreateTaskRunRequest{TargetAgentID: target, Input: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
				if err == nil && i%10 == 0 {
					_, err = client.CancelTaskRun(ctx, meshapi.CancelTaskRunRequest{TaskRunID: res.TaskRun.ID})
					res.TaskRun.Status = mesh.StatusCanceled
				}
				if err != nil {
					errs <- err
					continue
				}
				mu.Lock()
				created[res.TaskRun.ID] = res.TaskRun
				mu.Unlock()
			}
		}()
	}
	for i := range total {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create: %v", err)
	}
	if len(created) != total {
		t.Fatalf("created %d runs, want %d", len(created), total)
	}

	// Everything, in pages of 100, with a run created while paging.
	var late mesh.TaskRun
	all := pageAll(t, p, url.Values{"limit": {"100"}}, func(n int) {
		if n == 3 {
			late = p.CreateTask(a.ID, "arrived while paging")
		}
	})
	checkPaged(t, all, created, func(mesh.TaskRun) bool { return true })
	for _, r := range all {
		if r.ID == late.ID {
			t.Fatal("a run created after paging began showed up on a later page")
		}
	}
	var first page
	p.Send(t, meshtest.Request{Method: http.MethodGet, Path: "/task-runs?limit=1", Owner: true}).Expect(t, http.StatusOK).Decode(t, &first)
	if len(first.TaskRuns) != 1 || first.TaskRuns[0].ID != late.ID {
		t.Fatalf("a fresh first page does not start with the newest run %s", late.ID)
	}
	created[late.ID] = late

	filters := []struct {
		name  string
		q     url.Values
		match func(mesh.TaskRun) bool
	}{
		{"agent b", url.Values{"agent_id": {b.ID}, "limit": {"100"}}, func(r mesh.TaskRun) bool { return r.TargetAgentID == b.ID }},
		{"canceled", url.Values{"status": {"canceled"}, "limit": {"100"}}, func(r mesh.TaskRun) bool { return r.Status == mesh.StatusCanceled }},
		{"agent a pending", url.Values{"agent_id": {a.ID}, "status": {"pending"}, "limit": {"100"}}, func(r mesh.TaskRun) bool {
			return r.TargetAgentID == a.ID && r.Status == mesh.StatusPending
		}},
		{"default page size", url.Values{"agent_id": {b.ID}}, func(r mesh.TaskRun) bool { return r.TargetAgentID == b.ID }},
		{"largest page size", url.Values{"limit": {"500"}}, func(mesh.TaskRun) bool { return true }},
	}
	for _, f := range filters {
		t.Run(f.name, func(t *testing.T) {
			got := pageAll(t, p, f.q, nil)
			checkPaged(t, got, created, f.match)
		})
	}
}

// checkPaged checks that runs are newest first and hold every run of want
// that match selects, exactly once, and nothing else.
func checkPaged(t *testing.T, runs []mesh.TaskRun, want map[string]mesh.TaskRun, match func(mesh.TaskRun) bool) {
	t.Helper()
	seen := map[string]bool{}
	for i, r := range runs {
		if seen[r.ID] {
			t.Fatalf("run %s is listed twice", r.ID)
		}
		seen[r.ID] = true
		if _, ok := want[r.ID]; !ok {
			t.Fatalf("run %s was never created by this test", r.ID)
		}
		if !match(r) {
			t.Fatalf("run %s (agent %s, %s) does not match the filter", r.ID, r.TargetAgentID, r.Status)
		}
		// Ids are time-ordered and are the order; created_at is stamped a moment
		// before the id, so concurrent creates may differ by a scheduling delay.
		if i > 0 && (r.ID >= runs[i-1].ID || r.CreatedAt.After(runs[i-1].CreatedAt.Add(time.Second))) {
			t.Fatalf("run %d (%s, %s) is not older than run %d (%s, %s)", i, r.ID, r.CreatedAt, i-1, runs[i-1].ID, runs[i-1].CreatedAt)
		}
	}
	n := 0
	for id, r := range want {
		if match(r) {
			n++
			if !seen[id] {
				t.Fatalf("run %s (agent %s, %s) was skipped", id, r.TargetAgentID, r.Status)
			}
		}
	}
	if n != len(runs) || n == 0 {
		t.Fatalf("listed %d runs, want %d", len(runs), n)
	}
}

package partner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/a2amesh/a2amesh/internal/partnerapi"
	"github.com/a2amesh/a2amesh/internal/runfollow"
	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// status is GET /a2a/status?taskId=: the Task as JSON, or, when Accept
// names text/event-stream, a stream of it (seed 003): the Task now, then
// the Task again at each change, until it is completed, failed or
// canceled. 400 without taskId.
func (d *Endpoint) status(w http.ResponseWriter, r *http.Request) {
	const internal = "Status check failed"
	c, err := d.cfg.Admission.Admit(w, r)
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, internal))
		return
	}
	taskID := r.URL.Query().Get("taskId")
	if taskID == "" {
		writeError(w, refuse(partnerapi.CodeInvalidParams, http.StatusBadRequest, "taskId query parameter is required"))
		return
	}
	run, rec, err := d.visibleTask(r.Context(), c, taskID, meshapi.ScopeRead)
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, internal))
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		writeJSON(w, http.StatusOK, taskOf(run, rec))
		return
	}
	d.stream(w, r, run, rec)
}

// stream serves a task's changes as Server-Sent Events: each event is
// "event: task", "id: <run revision>" and the Task as data.
func (d *Endpoint) stream(w http.ResponseWriter, r *http.Request, run *mesh.TaskRun, rec *taskRecord) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-d.cfg.Closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	follow, err := d.cfg.Runs.FollowRuns(ctx, run)
	if err != nil {
		writeError(w, classify(d.cfg.Logger, err, "Status check failed"))
		return
	}
	defer follow.Stop()
	// Read after the follower started, so no change falls between.
	if run, err = d.cfg.Client.GetTaskRun(ctx, run.ID); err != nil {
		writeError(w, classify(d.cfg.Logger, err, "Status check failed"))
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(run *mesh.TaskRun) bool {
		b, _ := json.Marshal(taskOf(run, rec))
		_, err := fmt.Fprintf(w, "id: %d\nevent: task\ndata: %s\n\n", run.Revision, b)
		return err == nil && rc.Flush() == nil
	}
	if !send(run) {
		return
	}
	updates := runfollow.Feed(ctx, follow.NextRun)
	keepAlive := time.NewTicker(d.cfg.KeepAlive)
	defer keepAlive.Stop()
	for !run.Status.Terminal() {
		select {
		case next, ok := <-updates:
			if !ok {
				return
			}
			if next.Revision <= run.Revision {
				continue
			}
			run = next
			if !send(run) {
				return
			}
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

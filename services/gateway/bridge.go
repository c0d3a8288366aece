package gateway

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// The REST bridge: every operation of the table of operations
// (meshapi.Ops) for runtimes or owners whose REST binding only forwards is
// served here, by one handler. Routes that do more than forward
// (Binding.Custom) are written by hand (runtimeapi.go, people.go, ...) at
// the pattern the table gives.

// bridgeRoutes registers the bridge's routes, each behind the credential
// of its caller (a runtime being paired has none but its code: its route is
// open).
func (g *Gateway) bridgeRoutes(mux *http.ServeMux) {
	for _, op := range meshapi.Ops() {
		if op.REST == nil || op.REST.Custom {
			continue
		}
		switch op.Caller {
		case meshapi.CallerRuntime:
			g.runtime(mux, op.REST.Pattern(), g.bridge(op))
		case meshapi.CallerOwner:
			g.people(mux, op.REST.Pattern(), g.bridge(op))
		case meshapi.CallerPairing:
			g.handle(mux, op.REST.Pattern(), g.bridge(op))
		}
	}
}

// reportAck is the answer of a run's reports, which REST answers with the
// run as it now is (seed 001 §4.4).
var reportAck = reflect.TypeFor[meshapi.ReportAck]()

// runReply is the answer of an operation on a run, which REST answers with
// the run itself.
var runReply = reflect.TypeFor[meshapi.TaskRunReply]()

// bridge returns the handler of op's route: the body and the path values
// make its request, which the caller's client sends on the bus (a runtime's
// on its own subjects). A runtime's body (or a runtime's being paired) is
// read leniently, so runtimes of other versions keep working; a person's
// strictly, so a misspelt field is an error.
func (g *Gateway) bridge(op *meshapi.OpInfo) http.HandlerFunc {
	mode, status := strict, http.StatusOK
	if op.Caller == meshapi.CallerRuntime || op.Caller == meshapi.CallerPairing {
		mode = lenient
	}
	if op.REST.Status != 0 {
		status = op.REST.Status
	}
	return func(w http.ResponseWriter, r *http.Request) {
		req := reflect.New(op.Request).Interface()
		if err := decodeBody(w, r, g.cfg.MaxBodyBytes, mode, req); err != nil {
			g.writeError(w, r, err)
			return
		}
		// The path's values win over the body's.
		if err := op.REST.Bind(nil, r.PathValue, r.URL.Query(), req); err != nil {
			g.writeError(w, r, mesh.Errorf(mesh.CodeInvalidRequest, "%v", err))
			return
		}
		ctx := r.Context()
		if op.Waits {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, g.cfg.MaxPullWait+10*time.Second)
			defer cancel()
		}
		resp := reflect.New(op.Response).Interface()
		var err error
		if op.Caller == meshapi.CallerRuntime {
			id := runtimeOf(r)
			err = g.client.Runtime(id.AgentID, id.RuntimeID).Call(ctx, op, req, resp)
		} else {
			err = g.client.Call(ctx, op, req, resp)
		}
		switch {
		case err != nil:
		case op.Response == reportAck:
			g.replyRun(w, r, resp.(*meshapi.ReportAck).TaskRunID, nil)
			return
		case op.Response == runReply:
			resp = &resp.(*meshapi.TaskRunReply).TaskRun
		case op.REST.NoStore:
			w.Header().Set("Cache-Control", "no-store")
		}
		if err == nil && status == http.StatusNoContent {
			w.WriteHeader(status)
			return
		}
		g.reply(w, r, status, resp, err)
	}
}

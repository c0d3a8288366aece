package gateway

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// The REST bridge: every runtime operation of the table of operations
// (meshapi.Ops) whose REST binding only forwards is served here, by one
// handler. Routes that do more than forward (Binding.Custom) are written by
// hand in runtimeapi.go and artifacts.go.

// bridgeRoutes registers the bridge's routes.
func (g *Gateway) bridgeRoutes(mux *http.ServeMux) {
	for _, op := range meshapi.Ops() {
		if op.REST == nil || op.REST.Custom || op.Caller != meshapi.CallerRuntime {
			continue
		}
		g.runtime(mux, op.REST.Pattern(), g.bridge(op))
	}
}

// reportAck is the answer of a run's reports, which REST answers with the
// run as it now is (seed 001 §4.4).
var reportAck = reflect.TypeFor[meshapi.ReportAck]()

// bridge returns the handler of op's route: the body (read leniently, so
// runtimes of other versions keep working) and the path values make its
// request, which the authenticated runtime's own client sends on the bus.
func (g *Gateway) bridge(op *meshapi.OpInfo) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := readBody(w, r, g.cfg.MaxBodyBytes)
		if err == nil {
			// The precise message for a malformed body.
			var object map[string]any
			err = decodeJSON(body, lenient, &object)
		}
		req := reflect.New(op.Request).Interface()
		if err == nil {
			if berr := op.REST.Bind(body, r.PathValue, req); berr != nil {
				err = mesh.Errorf(mesh.CodeInvalidRequest, "malformed JSON body: %v", berr)
			}
		}
		if err != nil {
			g.writeError(w, r, err)
			return
		}
		ctx := r.Context()
		if op.Waits {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, g.cfg.MaxPullWait+10*time.Second)
			defer cancel()
		}
		id := runtimeOf(r)
		resp := reflect.New(op.Response).Interface()
		err = g.client.Runtime(id.AgentID, id.RuntimeID).Call(ctx, op, req, resp)
		if err == nil && op.Response == reportAck {
			g.replyRun(w, r, resp.(*meshapi.ReportAck).TaskRunID, nil)
			return
		}
		g.reply(w, r, http.StatusOK, resp, err)
	}
}

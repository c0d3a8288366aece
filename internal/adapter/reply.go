package adapter

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/internal/adapter/provider"
)

// replyBody returns the reply of seed 000 for a task outcome.
func replyBody(res *provider.Result, err error) any {
	if err != nil {
		f := adapterapi.FailureResponse{Success: false, Error: err.Error()}
		var budget *provider.BudgetError
		if errors.As(err, &budget) {
			f.Code = adapterapi.CodeBudgetExceeded
			if budget.Usage != nil {
				f.Usage = budget.Usage
			}
		}
		return f
	}
	out := map[string]any{}
	if res != nil && res.Output != nil {
		out = res.Output
	}
	return adapterapi.SuccessResponse{Success: true, Output: out}
}

// writeJSON writes v with status and flushes it, so that the reply is on the
// wire before the handler lets the next task or a shutdown proceed.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(adapterapi.FailureResponse{Error: "encode reply: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
	_ = http.NewResponseController(w).Flush()
}

// writeFailure writes a failure body with status.
func writeFailure(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, adapterapi.FailureResponse{Success: false, Error: msg})
}

// wantsStream reports whether the Accept header lists the NDJSON media type
// with a non-zero quality.
func wantsStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(part)
			if err == nil && mt == adapterapi.MediaNDJSON && !zeroQuality(params["q"]) {
				return true
			}
		}
	}
	return false
}

func zeroQuality(q string) bool {
	q = strings.TrimRight(strings.TrimSpace(q), "0")
	return q == "0" || q == "0."
}

// stream writes a streaming reply: progress lines while the task runs, then
// one result line. Providers may report progress from any goroutine.
type stream struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	rc   *http.ResponseController
	done bool
}

// newStream commits the 200 and its headers, so the runtime knows the task
// started.
func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", adapterapi.MediaNDJSON)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	s := &stream{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

func (s *stream) progress(p provider.Progress) {
	s.writeLine(adapterapi.StreamLine{Type: adapterapi.LineProgress, Message: p.Message, Percent: p.Percent}, false)
}

// result writes the result line; nothing is written after it.
func (s *stream) result(res *provider.Result, err error) {
	raw, mErr := json.Marshal(replyBody(res, err))
	if mErr != nil {
		raw, _ = json.Marshal(adapterapi.FailureResponse{Error: "encode reply: " + mErr.Error()})
	}
	s.writeLine(adapterapi.StreamLine{Type: adapterapi.LineResult, Result: raw}, true)
}

func (s *stream) writeLine(line adapterapi.StreamLine, last bool) {
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A provider reporting after its run ended must not touch a response
	// the server may already be reusing.
	if s.done {
		return
	}
	s.done = last
	// Write errors mean the client is gone; the task's context ends with
	// the request's, so there is nothing to do here.
	_, _ = s.w.Write(append(b, '\n'))
	if !last {
		_ = s.rc.Flush()
	}
	// The last line leaves with the end of the response, in one write, as
	// the handler returns right after it.
}

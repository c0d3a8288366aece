package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/a2amesh/a2amesh/internal/adapterapi"
)

// MaxRequestBytes caps a run-task body. Inputs are copied from the
// platform's input snapshot; the files of an input come inline (base64, up
// to 20 MiB together), which the cap leaves room for.
const MaxRequestBytes = 32 << 20

var errBodyTooLarge = fmt.Errorf("request body larger than %d bytes", MaxRequestBytes)

// wireRequest adds to the contract what the adapter must notice in order to
// refuse it.
type wireRequest struct {
	adapterapi.RunTaskRequest
	// RuntimeToken must never reach an adapter (seed 000 "Artifact Write
	// Requests": the adapter must not accept, store or forward it).
	RuntimeToken json.RawMessage `json:"runtime_token"`
}

// decodeRunTask decodes and validates a POST /run-task body. Unknown fields
// are ignored so that old adapters keep working when the runtime adds
// fields; the fields a task cannot run without are checked.
func decodeRunTask(body []byte) (adapterapi.RunTaskRequest, error) {
	switch firstByte(body) {
	case 0:
		return adapterapi.RunTaskRequest{}, errors.New("request body is empty")
	case '{':
	default:
		return adapterapi.RunTaskRequest{}, errors.New("request body must be a JSON object")
	}
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return adapterapi.RunTaskRequest{}, fmt.Errorf("invalid request: %s", jsonErrorText(err))
	}
	if w.RuntimeToken != nil {
		return adapterapi.RunTaskRequest{}, errors.New("request carries runtime_token, which must never reach an adapter")
	}
	if strings.TrimSpace(w.TaskRunID) == "" {
		return adapterapi.RunTaskRequest{}, errors.New("task_run_id is required")
	}
	if err := checkVariables(w.Environment); err != nil {
		return adapterapi.RunTaskRequest{}, err
	}
	switch firstByte(w.Input) {
	case 0:
		return adapterapi.RunTaskRequest{}, errors.New("input is required")
	case '{':
	default:
		return adapterapi.RunTaskRequest{}, errors.New("input must be a JSON object")
	}
	return w.RunTaskRequest, nil
}

// errVariables refuses a request with environment.variables. It names no
// variable and quotes no value: they may be secrets.
var errVariables = errors.New("environment.variables is not accepted: the platform never sends a host's variables, " +
	"so a request with some did not come from it; set what the host needs in the adapter's environment " +
	"(for an adapter the runtime starts, its adapter environment file)")

// checkVariables is the one place where a task's environment variables are
// let in. The platform refuses them from callers (it would have to store
// them), so any that arrive were put there by someone else, and in a host's
// environment a variable can run code (BASH_ENV, LD_PRELOAD): all are
// refused. Variables sealed by the platform for this adapter would be
// opened and checked here.
func checkVariables(env *adapterapi.Environment) error {
	if env != nil && len(env.Variables) > 0 {
		return errVariables
	}
	return nil
}

// firstByte returns the first byte of b after JSON whitespace, or 0.
func firstByte(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// jsonErrorText names the offending field in the request's own terms rather
// than in Go's.
func jsonErrorText(err error) string {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		field := strings.TrimPrefix(typeErr.Field, "RunTaskRequest.")
		return fmt.Sprintf("%s must not be a JSON %s", field, typeErr.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

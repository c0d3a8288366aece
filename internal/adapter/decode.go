package adapter

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
	"github.com/a2amesh/a2amesh/mesh"
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
	switch firstByte(w.Input) {
	case 0:
		return adapterapi.RunTaskRequest{}, errors.New("input is required")
	case '{':
	default:
		return adapterapi.RunTaskRequest{}, errors.New("input must be a JSON object")
	}
	return w.RunTaskRequest, nil
}

// errVariables refuses a request with environment.variables sent to an
// adapter no runtime started. It names no variable and quotes no value:
// they may be secrets.
var errVariables = errors.New("environment.variables is not accepted: this adapter takes a task's variables only from " +
	"the runtime that started it (which authenticates with the adapter's per-start token), and this adapter was " +
	"started without one; set what the host needs in the adapter's environment")

// checkVariables is the one place where a task's environment variables are
// let in. The platform never sends them in the clear: it seals them to the
// runtime's key, and the runtime opens them and puts them in its run-task
// request. So they are taken only by an adapter that authenticates its
// runtime (fromRuntime: it was started with a per-start token, and the
// request carried it, see auth.go); any other adapter refuses them, since
// in a host's environment a variable can run code. Names the platform
// never passes (mesh.ReservedEnvName) are refused even from the runtime.
func checkVariables(env *adapterapi.Environment, fromRuntime bool) error {
	if env == nil || len(env.Variables) == 0 {
		return nil
	}
	if !fromRuntime {
		return errVariables
	}
	if names := mesh.ReservedEnvNames(env.Variables); len(names) > 0 {
		return fmt.Errorf("environment.variables names variables a host is never given: %s", strings.Join(names, ", "))
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

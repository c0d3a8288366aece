package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/services/gateway/httpbody"
)

// decodeMode says how strictly a body is read.
type decodeMode int

const (
	// strict rejects unknown fields: people-facing requests, where a typo in
	// a field name must not be silently ignored.
	strict decodeMode = iota
	// lenient ignores unknown fields: runtime-facing requests, so runtimes of
	// other versions and other vendors keep working.
	lenient
)

// decodeBody reads a JSON object body of at most limit bytes into v. An empty
// body leaves v as it is.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, mode decodeMode, v any) error {
	body, err := readBody(w, r, limit)
	if err != nil || len(bytes.TrimSpace(body)) == 0 {
		return err
	}
	return decodeJSON(body, mode, v)
}

// readBody reads the whole body, enforcing the size limit and the JSON media type.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	b, err := httpbody.Read(w, r, limit)
	if errors.Is(err, httpbody.ErrTooLarge) {
		return nil, mesh.Errorf(mesh.CodePayloadTooLarge, "request body is larger than %d bytes", limit)
	}
	if err != nil {
		return nil, mesh.Errorf(mesh.CodeInvalidRequest, "reading request body: %v", err)
	}
	if !httpbody.Empty(b) && !httpbody.IsJSON(r.Header.Get("Content-Type")) {
		return nil, mesh.Errorf(mesh.CodeUnsupportedMedia, "request body must be application/json")
	}
	return b, nil
}

// decodeJSON parses one JSON object with precise messages for the usual mistakes.
func decodeJSON(body []byte, mode decodeMode, v any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] != '{' {
		return mesh.Errorf(mesh.CodeInvalidRequest, "request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if mode == strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return mesh.Errorf(mesh.CodeInvalidRequest, "malformed JSON body: %s", jsonProblem(err))
	}
	// dec.More() would miss a stray "}" or "]": only the end of input may follow.
	if _, err := dec.Token(); err != io.EOF {
		return mesh.Errorf(mesh.CodeInvalidRequest, "malformed JSON body: unexpected data after the object")
	}
	return nil
}

func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return "syntax error at byte " + strconv.FormatInt(syntax.Offset, 10)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return "field " + typ.Field + " must be " + typ.Type.String()
		}
		return "wrong type: expected " + typ.Type.String()
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends too early"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")
	}
	return err.Error()
}

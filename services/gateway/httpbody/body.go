// Package httpbody reads the body of a request for every door of the gateway
// (the REST API, the A2A endpoint, the partner and envelope endpoints):
// within a limit, once, into a buffer of the length the request announced,
// and says whether it is JSON. Each door answers a refusal in its own shape.
package httpbody

import (
	"bytes"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// ErrTooLarge is the error of a body larger than the limit it was read with.
var ErrTooLarge = errors.New("the request body is too large")

// Read reads r's body, at most limit bytes. A larger body is ErrTooLarge;
// any other error is the reading's.
func Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= limit {
		// ReadFrom wants MinRead bytes free before each read: with them
		// the buffer never grows (a grown one is a copy, and twice the size).
		buf.Grow(int(n) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, limit)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// IsJSON reports whether the Content-Type ct names JSON: application/json
// or a +json type.
func IsJSON(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// Empty reports whether b holds nothing but white space.
func Empty(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// Package httpheader sets fixed headers on every request an HTTP client
// sends: the headers an agent host is told to send its run's tool server,
// an API key.
package httpheader

import "net/http"

// Transport sets Header on a copy of every request, replacing any value
// the request had, and sends it with Next.
type Transport struct {
	Header map[string]string
	Next   http.RoundTripper
}

// RoundTrip sends a copy of r with the headers set.
func (t Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.Header {
		r.Header.Set(k, v)
	}
	return t.Next.RoundTrip(r)
}

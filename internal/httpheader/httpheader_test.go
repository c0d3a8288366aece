package httpheader

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestTransport_SetsItsHeadersOnACopyOfEveryRequest(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got <- r.Header }))
	defer srv.Close()
	c := &http.Client{Transport: Transport{Header: map[string]string{"authorization": "Bearer t", "X-Folder": "/w"}, Next: http.DefaultTransport}}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Authorization", "Bearer old")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	h := <-got
	if h.Get("Authorization") != "Bearer t" || h.Get("X-Folder") != "/w" {
		t.Fatalf("headers sent: %v", h)
	}
	if req.Header.Get("Authorization") != "Bearer old" {
		t.Fatalf("the caller's request was changed: %v", req.Header)
	}
}

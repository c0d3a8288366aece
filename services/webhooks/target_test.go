package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

// TestTarget_ConnectionsToInternalAddressesAreRefusedWhenDialed: the check
// is made again on the address actually dialed, so a name that resolved to a
// public address at creation and to loopback later (DNS rebinding) is still
// refused, and redirects are never followed.
func TestTarget_ConnectionsToInternalAddressesAreRefusedWhenDialed(t *testing.T) {
	t.Parallel()
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/hook", nil)
	_, err := newHTTPClient(false).Do(req)
	if !errors.Is(err, errPrivateTarget) {
		t.Fatalf("dial to loopback with private targets refused: %v, want errPrivateTarget", err)
	}
	if hits != 0 {
		t.Fatalf("the loopback server was reached %d times", hits)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/redirect", nil)
	resp, err := newHTTPClient(true).Do(req)
	if err != nil {
		t.Fatalf("allowed private target: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || hits != 1 {
		t.Fatalf("redirect: status %d after %d requests, want the 302 itself and no follow", resp.StatusCode, hits)
	}
}

func TestTarget_PublicAddr(t *testing.T) {
	t.Parallel()
	for addr, public := range map[string]bool{
		"93.184.216.34": true, "2606:4700::1111": true, "8.8.8.8": true,
		"127.0.0.1": false, "::1": false, "10.0.0.1": false, "172.16.5.4": false, "192.168.0.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd12::1": false, "224.0.0.1": false, "ff02::1": false,
		"0.0.0.0": false, "::": false, "100.64.0.1": false, "::ffff:127.0.0.1": false, "240.0.0.1": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr)); got != public {
			t.Errorf("publicAddr(%s) = %v, want %v", addr, got, public)
		}
	}
}

func TestSign_VerifyAcceptsItsOwnSignatureOnly(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"e1"}`)
	sig := Sign([]byte("secret-0123456789"), "e1", now.Unix(), body)
	ts := "1700000000"
	if err := Verify("secret-0123456789", "e1", ts, "v1,other "+sig, body, 5*time.Minute, now); err != nil {
		t.Fatalf("own signature refused: %v", err)
	}
	for name, check := range map[string]error{
		"other secret": Verify("secret-9876543210", "e1", ts, sig, body, 5*time.Minute, now),
		"other body":   Verify("secret-0123456789", "e1", ts, sig, []byte(`{"id":"e2"}`), 5*time.Minute, now),
		"other id":     Verify("secret-0123456789", "e2", ts, sig, body, 5*time.Minute, now),
		"too old":      Verify("secret-0123456789", "e1", ts, sig, body, 5*time.Minute, now.Add(6*time.Minute)),
		"bad stamp":    Verify("secret-0123456789", "e1", "x", sig, body, 5*time.Minute, now),
	} {
		if !errors.Is(check, ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, check)
		}
	}
}

// TestSubscription_KeyOfOlderSubscriptionsIsTheWholeSecret: subscriptions
// stored before secrets were keyed as Standard Webhooks keep signing with the
// whole secret string, so their receivers keep verifying; new ones use the
// decoded bytes of a whsec_ secret.
func TestSubscription_KeyOfOlderSubscriptionsIsTheWholeSecret(t *testing.T) {
	t.Parallel()
	const sec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	var older subscription
	if err := json.Unmarshal([]byte(`{"webhook_id":"w1","url":"https://example.com","secret":"`+sec+`"}`), &older); err != nil {
		t.Fatal(err)
	}
	if string(older.key()) != sec {
		t.Fatal("an older subscription's key is not its whole secret")
	}
	newer := subscription{Secret: sec, Standard: true}
	want, _ := Key(sec)
	if string(newer.key()) != string(want) || len(want) != 24 {
		t.Fatalf("a new subscription's key is %d bytes, want the 24 decoded bytes", len(newer.key()))
	}
}

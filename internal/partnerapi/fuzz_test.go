package partnerapi

import (
	"strconv"
	"testing"
	"time"
)

// FuzzVerify: a callback verifies exactly when its signature is the one
// Sign makes for its secret, timestamp and body and the timestamp is fresh;
// any other header value is refused without a panic.
func FuzzVerify(f *testing.F) {
	f.Add("shared-secret-0123456789", "1800000000", "sha256=00", []byte(`{"taskId":"t"}`), int64(0))
	f.Add("", "", "", []byte{}, int64(-61))
	f.Add("s", "1800000000.5", "sha256=", []byte("x"), int64(3600))
	f.Fuzz(func(t *testing.T, secret, timestamp, signature string, body []byte, skew int64) {
		now := time.Unix(1_800_000_000, 0)
		fresh := strconv.FormatInt(now.Unix()+skew%120, 10)
		good := Sign(secret, fresh, body)
		err := Verify(secret, fresh, good, body, time.Minute, now)
		if within := skew%120 >= -60 && skew%120 <= 60; within != (err == nil) {
			t.Fatalf("skew %ds: Verify(Sign) = %v", skew%120, err)
		}
		if signature != Sign(secret, timestamp, body) {
			if err := Verify(secret, timestamp, signature, body, time.Minute, now); err == nil {
				t.Fatalf("a signature Sign did not make was accepted: %q", signature)
			}
		}
	})
}

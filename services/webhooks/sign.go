package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Delivery headers (Standard Webhooks style). A receiver verifies a
// delivery with Verify, or by recomputing the signature itself (docs/events.md).
const (
	// HeaderID is the event id: the same for every attempt, so receivers
	// deduplicate on it.
	HeaderID = "Webhook-Id"
	// HeaderTimestamp is the attempt's time in Unix seconds; receivers refuse
	// old ones so a captured delivery cannot be replayed later.
	HeaderTimestamp = "Webhook-Timestamp"
	// HeaderSignature is "v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">".
	HeaderSignature = "Webhook-Signature"
	// ContentType is the media type of a structured-mode CloudEvent.
	ContentType = "application/cloudevents+json"
)

// Sign returns the signature header value of a delivery.
func Sign(secret, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ErrBadSignature is returned by Verify for a delivery that was not signed
// with the secret, or whose timestamp is outside the tolerance.
var ErrBadSignature = errors.New("webhooks: invalid signature")

// Verify checks a delivery's headers against its body, as a receiver does:
// the timestamp must be within tolerance of now, and one of the
// space-separated signatures must match.
func Verify(secret, id, timestamp, signatures string, body []byte, tolerance time.Duration, now time.Time) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if math.Abs(float64(now.Unix()-ts)) > tolerance.Seconds() {
		return ErrBadSignature
	}
	want := Sign(secret, id, ts, body)
	for _, sig := range strings.Fields(signatures) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}

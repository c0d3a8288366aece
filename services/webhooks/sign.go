package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// Delivery headers of the Standard Webhooks specification
// (standardwebhooks.com). A receiver verifies a delivery with any Standard
// Webhooks library, with Verify, or by recomputing the signature itself
// (docs/events.md).
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

// SecretPrefix marks a Standard Webhooks secret: "whsec_" followed by the
// base64 of the key bytes.
const SecretPrefix = "whsec_"

// secretBytes is the size of a generated key: within the 24 to 64 bytes the
// Standard Webhooks specification asks for.
const secretBytes = 32

// NewSecret returns a new Standard Webhooks secret: "whsec_" and the
// standard base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		panic("webhooks: system randomness unavailable: " + err.Error())
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ErrBadSecret is returned by Key for a "whsec_" secret whose rest is not base64.
var ErrBadSecret = errors.New("webhooks: a whsec_ secret must be followed by base64")

// Key returns the HMAC key of a secret the way Standard Webhooks libraries
// derive it: the base64-decoded bytes after "whsec_", or, for a secret
// without that prefix, its own bytes (the libraries' raw format).
func Key(secret string) ([]byte, error) {
	rest, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return []byte(secret), nil
	}
	if key, err := base64.StdEncoding.DecodeString(rest); err == nil {
		return key, nil
	}
	if key, err := base64.RawStdEncoding.DecodeString(rest); err == nil {
		return key, nil
	}
	return nil, ErrBadSecret
}

// Sign returns the signature header value of a delivery: "v1," and the
// base64 HMAC-SHA256, keyed with key, of "<id>.<timestamp>.<body>".
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ErrBadSignature is returned by Verify for a delivery that was not signed
// with the secret, or whose timestamp is outside the tolerance.
var ErrBadSignature = errors.New("webhooks: invalid signature")

// Verify checks a delivery's headers against its body, as a receiver (or
// any Standard Webhooks library) does: the timestamp must be within tolerance
// of now, and one of the space-separated signatures must match the one made
// with Key(secret).
func Verify(secret, id, timestamp, signatures string, body []byte, tolerance time.Duration, now time.Time) error {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if math.Abs(float64(now.Unix()-ts)) > tolerance.Seconds() {
		return ErrBadSignature
	}
	key, err := Key(secret)
	if err != nil {
		return ErrBadSignature
	}
	want := Sign(key, id, ts, body)
	for _, sig := range strings.Fields(signatures) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}

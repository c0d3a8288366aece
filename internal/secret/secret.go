// Package secret makes and checks the platform's credentials: pairing codes,
// runtime tokens, the owner credential and consumer credentials. The platform
// stores only their SHA-256 hashes; the plain values exist once, in the reply
// to whoever asked for them.
package secret

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// Prefixes make leaked credentials recognisable to secret scanners and to the
// platform's own log checks.
const (
	PrefixRuntime  = "a2art_"
	PrefixOwner    = "a2aown_"
	PrefixConsumer = "a2acon_"
	PrefixAPIKey   = "a2akey_"
	// PrefixSignIn marks the one-time code of a web sign-in link, and
	// PrefixWebSession a web sign-in session (the browser's cookie).
	PrefixSignIn     = "a2alogin_"
	PrefixWebSession = "a2aweb_"
	// PrefixPartnerSecret marks the shared secret a partner platform signs
	// its callbacks with.
	PrefixPartnerSecret = "a2aptn_"
)

// NewToken returns prefix followed by 256 random bits, base64url encoded.
func NewToken(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("secret: system randomness unavailable: " + err.Error())
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

var codeAlphabet = base32.NewEncoding("ABCDEFGHJKLMNPQRSTUVWXYZ23456789").WithPadding(base32.NoPadding)

// NewPairingCode returns a one-time pairing code a person can read and type:
// 20 characters from an alphabet without look-alikes (100 bits), in groups of five.
func NewPairingCode() string {
	b := make([]byte, 13)
	if _, err := rand.Read(b); err != nil {
		panic("secret: system randomness unavailable: " + err.Error())
	}
	s := codeAlphabet.EncodeToString(b)[:20]
	return s[0:5] + "-" + s[5:10] + "-" + s[10:15] + "-" + s[15:20]
}

// NormalizePairingCode makes codes typed with spaces, lowercase or without
// dashes compare equal to the issued form.
func NormalizePairingCode(code string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(code) {
		if r == '-' || r == ' ' || r == '\t' {
			continue
		}
		b.WriteRune(r)
	}
	s := b.String()
	// Issued codes are ASCII; grouping by bytes would split a multi-byte
	// character of anything else.
	if len(s) != 20 || strings.IndexFunc(s, func(r rune) bool { return r >= 0x80 }) >= 0 {
		return s
	}
	return s[0:5] + "-" + s[5:10] + "-" + s[10:15] + "-" + s[15:20]
}

// Hash returns the hex SHA-256 of a credential: what the platform stores and
// looks credentials up by. The credentials are high-entropy random values, so
// a plain hash is enough (no password stretching needed).
func Hash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Equal compares two secrets in constant time.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

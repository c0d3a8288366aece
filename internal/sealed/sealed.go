// Package sealed seals a caller's environment variables to one runtime's
// public key, and opens them with that runtime's private key. The platform
// seals (the gateway, before anything is stored) and never holds a key that
// opens; the runtime opens, just before it hands the variables to its
// adapter for one run. The keys are curve25519 key pairs in nkeys' xkey
// form (public "X…", private seed "SX…"); a box is NaCl's
// XSalsa20-Poly1305 from a key pair made for that one box.
package sealed

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/a2amesh/a2amesh/mesh"
	"github.com/a2amesh/a2amesh/meshapi"
)

// Errors Open returns.
var (
	// ErrOtherRecipient: the box was sealed to another runtime's key.
	ErrOtherRecipient = errors.New("sealed for another runtime")
	// ErrNoKey: the runtime has no sealing key (paired before runtimes had one).
	ErrNoKey = errors.New("this runtime has no sealing key")
	// ErrUnreadable: the box does not open with the runtime's key.
	ErrUnreadable = errors.New("the sealed variables do not open")
)

// NewKey makes a sealing key pair: the public key to register with the
// platform and the private seed to keep in the runtime's profile only.
func NewKey() (public, seed string, err error) {
	kp, err := nkeys.CreateCurveKeys()
	if err != nil {
		return "", "", fmt.Errorf("sealing key: %w", err)
	}
	defer kp.Wipe()
	public, err = kp.PublicKey()
	if err != nil {
		return "", "", fmt.Errorf("sealing key: %w", err)
	}
	raw, err := kp.Seed()
	if err != nil {
		return "", "", fmt.Errorf("sealing key: %w", err)
	}
	return public, string(raw), nil
}

// PublicKey returns the public key of a private seed.
func PublicKey(seed string) (string, error) {
	kp, err := nkeys.FromCurveSeed([]byte(seed))
	if err != nil {
		return "", errors.New("sealing key: not a curve key seed")
	}
	defer kp.Wipe()
	return kp.PublicKey()
}

// ValidPublicKey reports whether key is a curve public key ("X…").
func ValidPublicKey(key string) bool {
	return strings.HasPrefix(key, "X") && nkeys.IsValidPublicCurveKey(key)
}

// Seal seals vars to recipient, the public sealing key of runtimeID.
func Seal(vars map[string]string, runtimeID, recipient string) (*mesh.SealedVariables, error) {
	if !ValidPublicKey(recipient) {
		return nil, errors.New("seal: the runtime's sealing key is not a curve public key")
	}
	plain, err := json.Marshal(vars)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	sender, err := nkeys.CreateCurveKeys()
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	defer sender.Wipe()
	senderPub, err := sender.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	box, err := sender.Seal(plain, recipient)
	clear(plain)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &mesh.SealedVariables{RuntimeID: runtimeID, Recipient: recipient, Sender: senderPub, Box: base64.StdEncoding.EncodeToString(box)}, nil
}

// Open opens s with seed, the private sealing key of runtimeID. It returns
// ErrNoKey without a seed, ErrOtherRecipient when s was sealed to another
// runtime or key, and ErrUnreadable when the box does not open. Errors
// never quote the box or what it holds.
func Open(s *mesh.SealedVariables, runtimeID, seed string) (map[string]string, error) {
	if seed == "" {
		return nil, ErrNoKey
	}
	kp, err := nkeys.FromCurveSeed([]byte(seed))
	if err != nil {
		return nil, ErrNoKey
	}
	defer kp.Wipe()
	public, err := kp.PublicKey()
	if err != nil {
		return nil, ErrNoKey
	}
	if s.RuntimeID != runtimeID || s.Recipient != public {
		return nil, ErrOtherRecipient
	}
	box, err := base64.StdEncoding.DecodeString(s.Box)
	if err != nil {
		return nil, ErrUnreadable
	}
	plain, err := kp.Open(box, s.Sender)
	if err != nil {
		return nil, ErrUnreadable
	}
	defer clear(plain)
	var vars map[string]string
	if err := json.Unmarshal(plain, &vars); err != nil {
		return nil, ErrUnreadable
	}
	return vars, nil
}

// Key is a runtime's public sealing key as the platform knows it.
type Key struct {
	RuntimeID string
	Public    string
}

// KeySource finds the sealing key of an agent's active runtime; it answers
// a mesh error with mesh.CodeNoSealingKey when there is none.
type KeySource interface {
	SealingKey(ctx context.Context, agentID string) (Key, error)
}

// ForAgent checks a caller's variables and seals them to the key of
// agentID's active runtime. Forbidden names (mesh.ReservedEnvName) are
// refused with mesh.CodeInvalidRequest naming them; an agent without a
// runtime that has a key with mesh.CodeNoSealingKey. Messages never quote
// a value.
func ForAgent(ctx context.Context, keys KeySource, agentID string, vars map[string]string) (*mesh.SealedVariables, error) {
	if err := Check(vars); err != nil {
		return nil, err
	}
	key, err := keys.SealingKey(ctx, agentID)
	if err != nil {
		return nil, err
	}
	return Seal(vars, key.RuntimeID, key.Public)
}

// Limits of a caller's variables.
const (
	MaxVariables     = 100
	MaxValueBytes    = 32 << 10
	MaxNameBytes     = 256
	maxSealedOverlay = 1024
)

// MaxBoxBytes bounds a sealed box's base64 text: the most the limits above
// allow, sealed.
const MaxBoxBytes = (MaxVariables*(MaxValueBytes+MaxNameBytes+8)+maxSealedOverlay)*4/3 + 4

// Check refuses variables a caller may not pass: forbidden names (all of
// them named, sorted), names that are not letters, digits and '_' (not
// starting with a digit), too many, values too long or holding a NUL.
func Check(vars map[string]string) error {
	if names := mesh.ReservedEnvNames(vars); len(names) > 0 {
		return mesh.Errorf(mesh.CodeInvalidRequest, "environment variables the platform never passes to a host: %s (docs/api.md lists them)", strings.Join(names, ", "))
	}
	if len(vars) > MaxVariables {
		return mesh.Errorf(mesh.CodeInvalidRequest, "at most %d environment variables", MaxVariables)
	}
	for name, value := range vars {
		if !validName(name) {
			return mesh.Errorf(mesh.CodeInvalidRequest, "environment variable names are letters, digits and '_', not starting with a digit, at most %d bytes", MaxNameBytes)
		}
		if len(value) > MaxValueBytes || strings.IndexByte(value, 0) >= 0 {
			return mesh.Errorf(mesh.CodeInvalidRequest, "the value of environment variable %s is longer than %d bytes or holds a NUL byte", name, MaxValueBytes)
		}
	}
	return nil
}

func validName(name string) bool {
	if name == "" || len(name) > MaxNameBytes || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, c := range []byte(name) {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// PlatformKeys is the KeySource of a platform client: the credentials
// service answers.
type PlatformKeys struct{ Client *meshapi.Client }

// SealingKey implements KeySource.
func (p PlatformKeys) SealingKey(ctx context.Context, agentID string) (Key, error) {
	k, err := p.Client.SealingKey(ctx, agentID)
	if err != nil {
		return Key{}, err
	}
	return Key{RuntimeID: k.RuntimeID, Public: k.SealingKey}, nil
}

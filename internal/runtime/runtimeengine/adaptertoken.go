package runtimeengine

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
)

// An adapter the runtime starts takes work from this runtime only. At each
// start of it the runtime makes a new random token, writes it to a file only
// the user may read, in a folder only the user may enter, names that file
// with the adapter's --auth-token-file, and sends the token with every
// request. The token is never on the adapter's command line, which ps shows
// to every user, nor in its environment, which its hosts inherit.

// adapterTokenFlag is a2a-adapter's flag naming its token file.
const adapterTokenFlag = "--auth-token-file"

// adapterTokenBytes is the token's randomness: 256 bits.
const adapterTokenBytes = 32

// adapterTokens issues the tokens of one supervised adapter.
type adapterTokens struct {
	// dir holds the token file of each adapter process while it runs.
	dir string
}

func newAdapterTokens() (*adapterTokens, error) {
	dir, err := os.MkdirTemp("", "a2a-adapter-")
	if err != nil {
		return nil, fmt.Errorf("folder for the local adapter's token: %w", err)
	}
	return &adapterTokens{dir: dir}, nil
}

// issue makes a new token and writes it to a new file (mode 0600). It
// returns the file's path and the token.
func (t *adapterTokens) issue() (path, token string, err error) {
	b := make([]byte, adapterTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("local adapter's token: %w", err)
	}
	token = hex.EncodeToString(b)
	f, err := os.CreateTemp(t.dir, "token-")
	if err != nil {
		return "", "", fmt.Errorf("local adapter's token file: %w", err)
	}
	_, err = f.WriteString(token + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", "", fmt.Errorf("local adapter's token file: %w", err)
	}
	return f.Name(), token, nil
}

// removeAll deletes every token file; the adapter processes are gone.
func (t *adapterTokens) removeAll() { _ = os.RemoveAll(t.dir) }

// checkAdapterArgs refuses adapter arguments that would give the adapter a
// token of their own: it would refuse the runtime's every request.
func checkAdapterArgs(args []string) error {
	own := args
	if i := slices.Index(args, "--"); i >= 0 {
		own = args[:i]
	}
	for _, a := range own {
		if a == adapterTokenFlag || strings.HasPrefix(a, adapterTokenFlag+"=") {
			return fmt.Errorf("the adapter's arguments give it %s: the runtime gives the adapter it starts a token of its own; leave the flag out", adapterTokenFlag)
		}
	}
	return nil
}

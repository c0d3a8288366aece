package adapterapi

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrTokenFileOpen refuses a token file that other users may read: it holds
// no secret then.
var ErrTokenFileOpen = errors.New("may be read by other users")

// ReadTokenFile reads an adapter token file: the bearer token an adapter
// requires with every request but GET /health, and its runtime sends. One
// file serves both programs (a2a-adapter --auth-token-file, a2a-runtime
// start --adapter-token-file). The token is the file's text without
// surrounding white space; an empty file, or one others may read, is an
// error that never quotes the file's content.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("%s %w (mode %v); chmod 600 %s", path, ErrTokenFileOpen, perm, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return token, nil
}

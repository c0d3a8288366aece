package platform

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/a2amesh/a2amesh/internal/secret"
)

// OwnerTokenFile is the file under the data dir holding the owner credential.
const OwnerTokenFile = "owner.token"

// OwnerTokenPath returns where the owner credential of a data dir lives.
func OwnerTokenPath(dataDir string) string { return filepath.Join(dataDir, OwnerTokenFile) }

// LoadOrCreateOwnerToken returns the data dir's owner credential, creating it
// (mode 0600) on first start. created reports whether it is new.
func LoadOrCreateOwnerToken(dataDir string) (token string, created bool, err error) {
	path := OwnerTokenPath(dataDir)
	token, err = ReadOwnerToken(path)
	if err == nil {
		return token, false, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	token = secret.NewToken(secret.PrefixOwner)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it first; use theirs.
		token, err = ReadOwnerToken(path)
		return token, false, err
	}
	if err != nil {
		return "", false, fmt.Errorf("create %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(token + "\n"); err != nil {
		return "", false, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", false, fmt.Errorf("sync %s: %w", path, err)
	}
	return token, true, nil
}

// ReadOwnerToken reads an owner credential file, refusing one that others may read.
func ReadOwnerToken(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is readable by other users (mode %o); run: chmod 600 %s", path, info.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return token, nil
}

// Package downloads serves what a laptop installs from the platform itself:
// the a2a-runtime and a2a-adapter programs for each system (built by
// `make dist`, listed with their checksums in SHA256SUMS) and the install
// script that picks the right pair, verifies it and installs it without root
// or Go (`curl -fsSL <public URL>/install.sh | sh`).
package downloads

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"text/template"
	"time"
)

// SumsFile lists every program a downloads folder offers, as `sha256sum`
// writes it: "<hex digest>  <file name>" per line.
const SumsFile = "SHA256SUMS"

// fileName is what a served program is called: <program>_<os>_<arch>.
var fileName = regexp.MustCompile(`^(a2a-runtime|a2a-adapter)_(linux|darwin|windows)_(amd64|arm64)(\.exe)?$`)

//go:embed install.sh.tmpl
var installScript string

var installTemplate = template.Must(template.New("install.sh").Parse(installScript))

// Catalog is a downloads folder, and optionally the programs beside the
// platform. It is read on each request, so programs built after the
// platform started are offered at once.
type Catalog struct {
	dir string
	own *ownPrograms
}

// New returns the catalog of dir; an empty dir offers nothing, and the
// install script then says how the operator builds the programs.
func New(dir string) *Catalog { return &Catalog{dir: dir} }

// WithOwn makes the catalog offer, when its folder offers nothing, the
// a2a-runtime and a2a-adapter found in dir as the programs of the system
// goos/goarch: the programs `make build` puts beside the platform, built
// for the platform's own system. Both must be there.
func (c *Catalog) WithOwn(dir, goos, goarch string) *Catalog {
	if dir != "" {
		c.own = &ownPrograms{dir: dir, goos: goos, goarch: goarch, sums: map[string]ownSum{}}
	}
	return c
}

// ownPrograms are programs offered from beside the platform, under the
// names of the folder's files (<program>_<os>_<arch>).
type ownPrograms struct {
	dir, goos, goarch string
	mu                sync.Mutex
	// sums caches each program's digest by its size and time.
	sums map[string]ownSum
}

type ownSum struct {
	size   int64
	mod    time.Time
	sha256 string
}

// files lists the own programs on offer with their paths; none unless both
// programs are there.
func (o *ownPrograms) files() ([]File, map[string]string) {
	ext := ""
	if o.goos == "windows" {
		ext = ".exe"
	}
	var files []File
	paths := map[string]string{}
	for _, prog := range []string{"a2a-adapter", "a2a-runtime"} {
		path := filepath.Join(o.dir, prog+ext)
		sum, err := o.sum(path)
		if err != nil {
			return nil, nil
		}
		name := prog + "_" + o.goos + "_" + o.goarch + ext
		if !fileName.MatchString(name) {
			return nil, nil
		}
		files = append(files, File{Name: name, SHA256: sum})
		paths[name] = path
	}
	return files, paths
}

// sum is the SHA-256 of the regular file at path, read again only when
// its size or time changed.
func (o *ownPrograms) sum(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("downloads: %s is not a regular file", path)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if s, ok := o.sums[path]; ok && s.size == info.Size() && s.mod.Equal(info.ModTime()) {
		return s.sha256, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	o.sums[path] = ownSum{size: info.Size(), mod: info.ModTime(), sha256: sum}
	return sum, nil
}

// File is one program on offer.
type File struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Files lists the programs on offer, by name.
func (c *Catalog) Files() ([]File, error) {
	files, _, err := c.offer()
	return files, err
}

// offer lists the programs on offer and, for the programs from beside the
// platform, their paths.
func (c *Catalog) offer() ([]File, map[string]string, error) {
	files, err := c.folderFiles()
	if err != nil || len(files) > 0 || c.own == nil {
		return files, nil, err
	}
	files, paths := c.own.files()
	return files, paths, nil
}

// folderFiles lists the programs the downloads folder's SHA256SUMS names.
func (c *Catalog) folderFiles() ([]File, error) {
	if c.dir == "" {
		return nil, nil
	}
	data, err := os.ReadFile(filepath.Join(c.dir, SumsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("downloads: %w", err)
	}
	var files []File
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// "<sum>  <name>", or "<sum> *<name>" in sha256sum's binary mode.
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 || len(fields[0]) != 64 {
			continue
		}
		name := strings.TrimPrefix(fields[1], "*")
		if !fileName.MatchString(name) {
			continue
		}
		files = append(files, File{Name: name, SHA256: fields[0]})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// safeURL is what a base URL may hold to stand inside the script's quotes.
var safeURL = regexp.MustCompile(`^https?://[A-Za-z0-9._~:/%@\[\]-]+$`)

// Script renders the install script for a platform reached at baseURL.
func (c *Catalog) Script(baseURL string) ([]byte, error) {
	if !safeURL.MatchString(baseURL) {
		return nil, fmt.Errorf("downloads: public URL %q cannot be written into the install script", baseURL)
	}
	files, err := c.Files()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	err = installTemplate.Execute(&b, struct {
		BaseURL string
		Offered bool
	}{BaseURL: strings.TrimSuffix(baseURL, "/"), Offered: len(files) > 0})
	return b.Bytes(), err
}

// ServeFile writes one program, or the checksums, to w. It reports false
// when name is not on offer.
func (c *Catalog) ServeFile(w http.ResponseWriter, r *http.Request, name string) bool {
	files, paths, err := c.offer()
	if err != nil || len(files) == 0 || (name != SumsFile && !offered(files, name)) {
		return false
	}
	if paths != nil && name == SumsFile {
		// The programs from beside the platform have no list of their own.
		var b strings.Builder
		for _, f := range files {
			fmt.Fprintf(&b, "%s  %s\n", f.SHA256, f.Name)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, b.String())
		return true
	}
	path := filepath.Join(c.dir, name)
	if p, ok := paths[name]; ok {
		path = p
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", "attachment; filename="+name)
	http.ServeContent(w, r, name, info.ModTime(), f)
	return true
}

func offered(files []File, name string) bool {
	for _, f := range files {
		if f.Name == name {
			return true
		}
	}
	return false
}

// Package downloads serves what a laptop installs from the platform itself:
// the a2a-runtime and a2a-adapter programs for each system (built by
// `make dist`, listed with their checksums in SHA256SUMS) and the install
// script that picks the right pair, verifies it and installs it without root
// or Go (`curl -fsSL <public URL>/install.sh | sh`).
package downloads

import (
	"bufio"
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"
)

// SumsFile lists every program a downloads folder offers, as `sha256sum`
// writes it: "<hex digest>  <file name>" per line.
const SumsFile = "SHA256SUMS"

// fileName is what a served program is called: <program>_<os>_<arch>.
var fileName = regexp.MustCompile(`^(a2a-runtime|a2a-adapter)_(linux|darwin|windows)_(amd64|arm64)(\.exe)?$`)

//go:embed install.sh.tmpl
var installScript string

var installTemplate = template.Must(template.New("install.sh").Parse(installScript))

// Catalog is a downloads folder. It is read on each request, so programs
// built after the platform started are offered at once.
type Catalog struct {
	dir string
}

// New returns the catalog of dir; an empty dir offers nothing, and the
// install script then says how the operator builds the programs.
func New(dir string) *Catalog { return &Catalog{dir: dir} }

// File is one program on offer.
type File struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Files lists the programs on offer, by name.
func (c *Catalog) Files() ([]File, error) {
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
	if name != SumsFile {
		files, err := c.Files()
		if err != nil || !offered(files, name) {
			return false
		}
	} else if files, err := c.Files(); err != nil || len(files) == 0 {
		return false
	}
	f, err := os.Open(filepath.Join(c.dir, name))
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

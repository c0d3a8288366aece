package provider

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/internal/adapter/adapterapi"
)

// DefaultMaxArtifactBytes caps one output file. The file travels inside the
// JSON reply (base64 for binary files), so the cap keeps a runaway host from
// producing a reply the runtime cannot carry.
const DefaultMaxArtifactBytes = 25 << 20

// mimeTypes fixes the types of common deliverables. The standard library's
// table depends on the machine's mime.types files, and a reply should not.
var mimeTypes = map[string]string{
	".md":       "text/markdown",
	".markdown": "text/markdown",
	".txt":      "text/plain",
	".log":      "text/plain",
	".csv":      "text/csv",
	".tsv":      "text/tab-separated-values",
	".html":     "text/html",
	".htm":      "text/html",
	".css":      "text/css",
	".js":       "text/javascript",
	".json":     "application/json",
	".ndjson":   "application/x-ndjson",
	".xml":      "application/xml",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
	".toml":     "application/toml",
	".svg":      "image/svg+xml",
	".png":      "image/png",
	".jpg":      "image/jpeg",
	".jpeg":     "image/jpeg",
	".gif":      "image/gif",
	".webp":     "image/webp",
	".pdf":      "application/pdf",
	".zip":      "application/zip",
	".gz":       "application/gzip",
	".tar":      "application/x-tar",
	".docx":     "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	".xlsx":     "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	".pptx":     "application/vnd.openxmlformats-officedocument.presentationml.presentation",
	".mp3":      "audio/mpeg",
	".wav":      "audio/wav",
	".mp4":      "video/mp4",
}

// textMimeTypes are the non-text/* types whose bodies are text.
var textMimeTypes = []string{
	"application/json", "application/x-ndjson", "application/xml",
	"application/yaml", "application/toml", "image/svg+xml",
}

// CollectArtifacts turns every regular file under dir into an artifact write
// request: filename relative to dir with forward slashes, mime_type by
// extension, content_text for text files and content_base64 for the rest.
// Symbolic links and special files are skipped: a host must not be able to
// make the adapter read a file outside dir, such as the runtime's profile. A
// file over maxBytes fails the whole collection with ErrArtifactTooLarge.
// Files come in lexical order.
func CollectArtifacts(dir string, maxBytes int64) ([]adapterapi.ArtifactWrite, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxArtifactBytes
	}
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // the host removed its output directory: no outputs
	}
	var out []adapterapi.ArtifactWrite
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		body, err := readOutputFile(path, maxBytes)
		if err != nil {
			return fmt.Errorf("output file %s: %w", name, err)
		}
		out = append(out, artifactWrite(name, body))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("collect outputs: %w", err)
	}
	return out, nil
}

// readOutputFile reads a regular file of at most maxBytes without following
// a symbolic link put in its place after the walk saw it.
func readOutputFile(path string, maxBytes int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if info.Size() > maxBytes {
		return nil, fmt.Errorf("%w (%d bytes, limit %d)", ErrArtifactTooLarge, info.Size(), maxBytes)
	}
	// The file may still be growing; never read past the cap.
	body, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > maxBytes {
		return nil, fmt.Errorf("%w (over the limit of %d bytes)", ErrArtifactTooLarge, maxBytes)
	}
	return body, nil
}

func artifactWrite(name string, body []byte) adapterapi.ArtifactWrite {
	mt := mimeType(name, body)
	w := adapterapi.ArtifactWrite{Filename: name, MimeType: mt}
	if isTextType(mt) && utf8.Valid(body) {
		w.ContentText = string(body)
	} else {
		w.ContentBase64 = base64.StdEncoding.EncodeToString(body)
	}
	return w
}

// mimeType picks the type by extension, then from the system table, then by
// sniffing the content.
func mimeType(name string, body []byte) string {
	ext := strings.ToLower(filepath.Ext(name))
	if mt, ok := mimeTypes[ext]; ok {
		return mt
	}
	if mt := mime.TypeByExtension(ext); mt != "" {
		return stripParams(mt)
	}
	return stripParams(http.DetectContentType(body))
}

func stripParams(mt string) string {
	base, _, _ := strings.Cut(mt, ";")
	return strings.TrimSpace(base)
}

func isTextType(mt string) bool {
	return strings.HasPrefix(mt, "text/") || slices.Contains(textMimeTypes, mt)
}

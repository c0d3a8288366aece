package artifacts

import (
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"mime"
	"net/http"
	"path"
	"unicode/utf8"
)

// contentMeter sees an artifact's content on its way to the store: it
// counts and hashes it, keeps its first bytes for a media type guess, and
// tracks whether it is UTF-8.
type contentMeter struct {
	size    int64
	sha     hash.Hash
	head    []byte
	partial []byte // an incomplete UTF-8 sequence at the end of the last write
	invalid bool
}

func newContentMeter() *contentMeter { return &contentMeter{sha: sha256.New()} }

func (m *contentMeter) Write(p []byte) {
	m.size += int64(len(p))
	m.sha.Write(p)
	if n := min(len(p), 512-len(m.head)); n > 0 {
		m.head = append(m.head, p[:n]...)
	}
	m.checkUTF8(p)
}

// checkUTF8 validates UTF-8 across writes: a sequence cut by a write's end
// is completed by the next.
func (m *contentMeter) checkUTF8(p []byte) {
	if m.invalid {
		return
	}
	if len(m.partial) > 0 {
		take := min(len(p), utf8.UTFMax-len(m.partial))
		joined := append(append([]byte(nil), m.partial...), p[:take]...)
		r, size := utf8.DecodeRune(joined)
		if r == utf8.RuneError && size <= 1 && utf8.FullRune(joined) {
			m.invalid = true
			return
		}
		if !utf8.FullRune(joined) {
			m.partial = joined
			return
		}
		p = p[size-len(m.partial):]
		m.partial = nil
	}
	cut := len(p)
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(p[:cut]) {
		m.invalid = true
		return
	}
	m.partial = append(m.partial[:0], p[cut:]...)
}

// utf8 reports whether the whole content was UTF-8.
func (m *contentMeter) utf8() bool { return !m.invalid && len(m.partial) == 0 }

// guessMime guesses a media type from the file name, else from whether the
// content is text, else from its first 512 bytes.
func guessMime(name string, head []byte, text bool) string {
	if mt := mime.TypeByExtension(path.Ext(name)); mt != "" {
		return mt
	}
	if text {
		return "text/plain; charset=utf-8"
	}
	return http.DetectContentType(head)
}

// fullReader reads until p is full or the content ends.
type fullReader struct{ r io.Reader }

func (f fullReader) Read(p []byte) (int, error) {
	n, err := io.ReadFull(f.r, p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return n, io.EOF
	}
	return n, err
}

package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/a2amesh/a2amesh/mesh"
)

// An artifact upload is one JSON object whose content field (content_text
// or content_base64) may be tens of megabytes. Reading it whole, decoding
// the JSON string and then the base64 held the content four to six times in
// memory at once. uploadReader instead walks the object a token at a time:
// metadata fields are small and decoded as usual, and the content string is
// unescaped (and base64-decoded) on the fly into whatever consumes it (the
// object store), so an upload needs a few buffers whatever its size.

// maxMetaValue bounds the JSON of one metadata field.
const maxMetaValue = 64 << 10

// Content fields of an upload.
const (
	fieldContentText   = "content_text"
	fieldContentBase64 = "content_base64"
)

// errUploadSyntax is a body that is not well-formed JSON (walk says where).
var errUploadSyntax = mesh.Errorf(mesh.CodeInvalidRequest, "malformed JSON body")

// uploadReader walks one upload body.
type uploadReader struct {
	r    *bufio.Reader
	read *countingReader
}

func newUploadReader(r io.Reader) *uploadReader {
	c := &countingReader{r: r}
	return &uploadReader{r: bufio.NewReaderSize(c, 32<<10), read: c}
}

// countingReader counts the bytes read from the body, to say where a
// syntax error is.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// walk reads the object: meta gets each other field's raw JSON, content
// gets a reader of each content field's decoded bytes (which it must read
// to the end, or fail).
func (u *uploadReader) walk(meta func(name string, raw json.RawMessage) error, content func(name string, r io.Reader) error) error {
	if c, err := u.next(); err != nil || c != '{' {
		return mesh.Errorf(mesh.CodeInvalidRequest, "request body must be a JSON object")
	}
	_ = u.r.UnreadByte()
	err := u.object(meta, content)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return mesh.Errorf(mesh.CodeInvalidRequest, "malformed JSON body: the JSON ends too early")
	case errors.Is(err, errUploadSyntax):
		// The error is at the last byte read.
		return mesh.Errorf(mesh.CodeInvalidRequest, "malformed JSON body: syntax error at byte %d", u.read.n-int64(u.r.Buffered()))
	}
	return err
}

func (u *uploadReader) object(meta func(name string, raw json.RawMessage) error, content func(name string, r io.Reader) error) error {
	if err := u.expect('{'); err != nil {
		return err
	}
	c, err := u.next()
	if err != nil {
		return err
	}
	if c == '}' {
		return u.end()
	}
	_ = u.r.UnreadByte()
	for {
		name, err := u.key()
		if err != nil {
			return err
		}
		if err := u.field(name, meta, content); err != nil {
			return err
		}
		c, err := u.next()
		if err != nil {
			return err
		}
		switch c {
		case ',':
			continue
		case '}':
			return u.end()
		}
		return errUploadSyntax
	}
}

// field reads one field's value.
func (u *uploadReader) field(name string, meta func(string, json.RawMessage) error, content func(string, io.Reader) error) error {
	if name != fieldContentText && name != fieldContentBase64 {
		raw, err := u.value()
		if err != nil {
			return err
		}
		return meta(name, raw)
	}
	c, err := u.next()
	if err != nil {
		return err
	}
	if c != '"' {
		return mesh.Errorf(mesh.CodeInvalidRequest, "%s must be a string", name)
	}
	s := &stringReader{r: u.r}
	if err := content(name, s); err != nil {
		return err
	}
	if !s.done {
		return fmt.Errorf("%s was not read to its end", name)
	}
	return nil
}

// key reads a field name and the colon after it.
func (u *uploadReader) key() (string, error) {
	raw, err := u.value()
	if err != nil {
		return "", err
	}
	var name string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &name) != nil {
		return "", errUploadSyntax
	}
	return name, u.expect(':')
}

// end checks that nothing but white space follows the object.
func (u *uploadReader) end() error {
	if _, err := u.next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		return errUploadSyntax
	}
	return nil
}

// expect reads the next non-space byte, which must be want.
func (u *uploadReader) expect(want byte) error {
	c, err := u.next()
	if err != nil {
		return err
	}
	if c != want {
		return errUploadSyntax
	}
	return nil
}

// next returns the next byte that is not white space; a body that ends is
// io.ErrUnexpectedEOF, a read error (a body over its limit) as it is.
func (u *uploadReader) next() (byte, error) {
	for {
		c, err := u.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return 0, io.ErrUnexpectedEOF
		}
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c, nil
	}
}

// value returns the raw JSON of the next value, at most maxMetaValue bytes.
func (u *uploadReader) value() (json.RawMessage, error) {
	c, err := u.next()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteByte(c)
	depth, inString, escaped := 0, c == '"', false
	switch c {
	case '{', '[':
		depth = 1
	case '"':
	default:
		// A number, true, false or null: up to the next delimiter.
		for {
			b, err := u.r.ReadByte()
			if err != nil {
				return nil, readError(err, errUploadSyntax)
			}
			if bytes.IndexByte([]byte(",}] \t\r\n"), b) >= 0 {
				_ = u.r.UnreadByte()
				return checkValue(buf.Bytes())
			}
			if buf.WriteByte(b); buf.Len() > maxMetaValue {
				return nil, errMetaTooLarge
			}
		}
	}
	for depth > 0 || inString {
		b, err := u.r.ReadByte()
		if err != nil {
			return nil, readError(err, errUploadSyntax)
		}
		if buf.WriteByte(b); buf.Len() > maxMetaValue {
			return nil, errMetaTooLarge
		}
		switch {
		case escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
			if !inString && depth == 0 {
				return checkValue(buf.Bytes())
			}
		case inString:
		case b == '{' || b == '[':
			depth++
		case b == '}' || b == ']':
			depth--
		}
	}
	return checkValue(buf.Bytes())
}

var errMetaTooLarge = mesh.Errorf(mesh.CodeInvalidRequest, "a metadata field of the upload is larger than %d bytes", maxMetaValue)

// readError is what a failed read of the body means: the body's own error
// when it was too large (or went away), else malformed, what the body ends
// in the middle of.
func readError(err, malformed error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if malformed == errUploadSyntax {
			return io.ErrUnexpectedEOF
		}
		return malformed
	}
	return err
}

func checkValue(b []byte) (json.RawMessage, error) {
	if !json.Valid(b) {
		return nil, errUploadSyntax
	}
	return json.RawMessage(bytes.Clone(b)), nil
}

// stringReader reads the characters of a JSON string whose opening quote
// was read, unescaped, up to its closing quote. Plain characters go straight
// from the body's buffer to the caller; an escape is decoded into pending.
type stringReader struct {
	r       *bufio.Reader
	pending []byte // an unescaped sequence, from off on not yet handed out
	off     int
	done    bool
}

func (s *stringReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if s.off < len(s.pending) {
			k := copy(p[n:], s.pending[s.off:])
			s.off += k
			n += k
			continue
		}
		if s.done {
			break
		}
		k, err := s.plain(p[n:])
		n += k
		if err != nil {
			return n, err
		}
		if k == 0 {
			if err := s.special(); err != nil {
				return n, err
			}
		}
	}
	if n == 0 && s.done {
		return 0, io.EOF
	}
	return n, nil
}

// plain copies the run of plain characters at the front of the buffer.
func (s *stringReader) plain(p []byte) (int, error) {
	if _, err := s.r.Peek(1); err != nil {
		return 0, readError(err, errUploadString)
	}
	chunk, _ := s.r.Peek(min(s.r.Buffered(), len(p)))
	k := 0
	for k < len(chunk) && chunk[k] != '"' && chunk[k] != '\\' && chunk[k] >= 0x20 {
		k++
	}
	copy(p, chunk[:k])
	_, _ = s.r.Discard(k)
	return k, nil
}

// special reads the closing quote or an escape sequence.
func (s *stringReader) special() error {
	c, err := s.r.ReadByte()
	if err != nil {
		return readError(err, errUploadString)
	}
	switch {
	case c == '"':
		s.done = true
		return nil
	case c < 0x20:
		return errUploadString
	}
	s.pending, s.off = s.pending[:0], 0
	return s.escape()
}

// simpleEscapes are the one-letter escapes of JSON strings.
var simpleEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escape reads one escape sequence after its backslash.
func (s *stringReader) escape() error {
	c, err := s.r.ReadByte()
	if err != nil {
		return errUploadString
	}
	if b, ok := simpleEscapes[c]; ok {
		s.pending = append(s.pending, b)
		return nil
	}
	if c != 'u' {
		return errUploadString
	}
	r, err := s.hex4()
	if err != nil {
		return err
	}
	if utf16.IsSurrogate(r) {
		// A pair's second half follows; alone, a surrogate is U+FFFD (as
		// encoding/json decodes it).
		if next, err := s.r.Peek(6); err == nil && next[0] == '\\' && next[1] == 'u' {
			_, _ = s.r.Discard(2)
			low, err := s.hex4()
			if err != nil {
				return err
			}
			if dec := utf16.DecodeRune(r, low); dec != utf8.RuneError {
				r = dec
			} else {
				s.pending = utf8.AppendRune(s.pending, utf8.RuneError)
				r = low
				if utf16.IsSurrogate(low) {
					r = utf8.RuneError
				}
				s.pending = utf8.AppendRune(s.pending, r)
				return nil
			}
		} else {
			r = utf8.RuneError
		}
	}
	s.pending = utf8.AppendRune(s.pending, r)
	return nil
}

func (s *stringReader) hex4() (rune, error) {
	var r rune
	for range 4 {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, errUploadString
		}
		var v byte
		switch {
		case '0' <= c && c <= '9':
			v = c - '0'
		case 'a' <= c && c <= 'f':
			v = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, errUploadString
		}
		r = r<<4 | rune(v)
	}
	return r, nil
}

var errUploadString = mesh.Errorf(mesh.CodeInvalidRequest, "malformed JSON string in the upload's content")

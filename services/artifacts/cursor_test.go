package artifacts

import "testing"

// FuzzParseCursor: whatever a reader sends as a cursor is either a cursor
// that reads back as itself or the start of the content; it never names
// sequence 0 (the stream's sequences start at 1) nor a negative offset.
func FuzzParseCursor(f *testing.F) {
	for _, s := range []string{"", "1:0", "42:262144", "0:0", "1:-1", "x:y", "18446744073709551615:9223372036854775807", ":", "1:2:3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := parseCursor(s)
		if c.seq == 0 || c.start < 0 {
			t.Fatalf("parseCursor(%q) = %+v", s, c)
		}
		if c != (readCursor{seq: 1}) && parseCursor(c.String()) != c {
			t.Fatalf("parseCursor(%q) = %+v, which reads back as %+v", s, c, parseCursor(c.String()))
		}
	})
}

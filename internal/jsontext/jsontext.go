// Package jsontext writes JSON strings without reflection, byte for byte
// as encoding/json writes them, for the hot paths that write JSON by hand:
// the runtime's ledger lines and the events GET /events sends.
package jsontext

import "encoding/json"

// Plain reports whether encoding/json writes s as it is between quotes:
// printable ASCII without the characters it escapes (", \, <, >, &).
func Plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// AppendString appends s as a JSON string, as json.Marshal writes it: a
// plain string as it is, any other through encoding/json itself.
func AppendString(b []byte, s string) []byte {
	if !Plain(s) {
		q, _ := json.Marshal(s) // a string always encodes
		return append(b, q...)
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

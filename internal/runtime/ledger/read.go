package ledger

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Entries reads the whole ledger in order. A last line without its newline
// (a write cut short by a crash, or one in progress) and lines that are not
// JSON objects are skipped; unknown fields, from newer versions, are ignored.
func (l *Ledger) Entries() ([]Entry, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	defer f.Close()
	entries, err := readEntries(f)
	if err != nil {
		return nil, fmt.Errorf("read ledger %s: %w", l.path, err)
	}
	return entries, nil
}

func readEntries(r io.Reader) ([]Entry, error) {
	br := bufio.NewReader(r)
	var entries []Entry
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// Whatever precedes EOF without a newline is a torn line.
			return entries, nil
		}
		if err != nil {
			return nil, err
		}
		var e Entry
		if json.Unmarshal(line, &e) != nil || e.Event == "" {
			continue
		}
		entries = append(entries, e)
	}
}

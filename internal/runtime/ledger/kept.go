package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// keptDirName is the directory beside the ledger file that holds the
// content of the artifacts pending reports store: one directory per
// report, named by its id, one file per artifact, named by its index.
// Content can be large (an artifact up to the platform's limit), so it is
// kept out of the ledger's lines.
const keptDirName = "outbox"

// keptDir is the directory of report id's kept content.
func (l *Ledger) keptDir(id string) string {
	return filepath.Join(filepath.Dir(l.path), keptDirName, id)
}

// keptFile is the file of one artifact's kept content.
func (l *Ledger) keptFile(id string, index int) string {
	return filepath.Join(l.keptDir(id), strconv.Itoa(index))
}

// keep writes the content of r's artifacts not yet stored (contents[i] is
// artifact i's; nil for one whose Ref is set) and syncs it, before the
// report's line names it. A content holding a registered secret writes
// nothing. l.mu must be held.
func (l *Ledger) keep(r Report, contents [][]byte) error {
	if len(contents) != len(r.Artifacts) {
		return errorf("report %s has %d artifacts and %d contents", r.ID, len(r.Artifacts), len(contents))
	}
	for i, c := range contents {
		if l.containsSecret(c) {
			return fmt.Errorf("keep artifact %d of report %s: %w", i, r.ID, ErrSecret)
		}
		if r.Artifacts[i].Ref != nil && c != nil {
			return errorf("report %s: artifact %d is stored and has content", r.ID, i)
		}
	}
	dir := l.keptDir(r.ID)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("keep artifacts of report %s: %w", r.ID, err)
	}
	for i, c := range contents {
		if r.Artifacts[i].Ref != nil {
			continue
		}
		if err := writeSynced(l.keptFile(r.ID, i), c); err != nil {
			_ = os.RemoveAll(dir)
			return fmt.Errorf("keep artifact %d of report %s: %w", i, r.ID, err)
		}
	}
	if err := syncDir(dir); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("keep artifacts of report %s: %w", r.ID, err)
	}
	return nil
}

func writeSynced(path string, content []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return err
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// KeptContent returns the content of artifact index of pending report id,
// as AppendPending kept it.
func (l *Ledger) KeptContent(id string, index int) ([]byte, error) {
	if err := validateElement(id); err != nil {
		return nil, errorf("report id: %v", err)
	}
	b, err := os.ReadFile(l.keptFile(id, index))
	if err != nil {
		return nil, fmt.Errorf("read kept artifact %d of report %s: %w", index, id, err)
	}
	return b, nil
}

// MarkArtifactWritten notes that the platform stored artifact index of
// pending report id, with ref its reference: Pending gives the report
// with the ref from then on, so a retry skips the artifact, and its kept
// content is removed. The line is synced before it returns.
func (l *Ledger) MarkArtifactWritten(id string, index int, ref json.RawMessage) error {
	if len(ref) == 0 || !json.Valid(ref) {
		return errorf("artifact %d of report %s: ref is not valid JSON", index, id)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r, err := l.pendingReport(id)
	if err != nil {
		return fmt.Errorf("mark artifact %d of report %s written: %w", index, id, err)
	}
	if index < 0 || index >= len(r.Artifacts) {
		return errorf("report %s has no artifact %d", id, index)
	}
	err = l.write(true, Entry{
		Event:     EventReportArtifactWritten,
		TaskRunID: r.TaskRunID,
		Attempt:   r.Attempt,
		Status:    string(r.Kind),
		Report: &Report{ID: r.ID, Kind: r.Kind, TaskRunID: r.TaskRunID, Attempt: r.Attempt,
			Artifacts: []KeptArtifact{{Index: index, Ref: ref}}},
	})
	if err != nil {
		return err
	}
	if err := os.Remove(l.keptFile(id, index)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove kept artifact %d of report %s: %w", index, id, err)
	}
	return nil
}

// PruneKept removes kept content that no pending report names: left by a
// process that stopped between keeping a report's content and writing its
// line, or between closing a report and removing its content. Only the
// process that sends the outbox calls it (another could be keeping a
// report right now).
func (l *Ledger) PruneKept() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	entries, err := os.ReadDir(filepath.Join(filepath.Dir(l.path), keptDirName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read kept artifacts: %w", err)
	}
	pending, err := l.Pending()
	if err != nil {
		return err
	}
	open := map[string]bool{}
	for _, r := range pending {
		open[r.ID] = true
	}
	var errs []error
	for _, e := range entries {
		if !open[e.Name()] {
			errs = append(errs, os.RemoveAll(l.keptDir(e.Name())))
		}
	}
	return errors.Join(errs...)
}

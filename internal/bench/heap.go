package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// heapSplit is a process's live Go heap, split by who allocated it: the
// NATS server's code, or the rest of the process.
type heapSplit struct {
	Server, Other int64
	// Goroutines is how many goroutines the process has, and Stacks the
	// memory their stacks hold.
	Goroutines int
	Stacks     int64
}

// serverCode marks the NATS server's frames in a heap profile's stacks.
const serverCode = "nats-server/v2/server."

// readHeapSplit reads the heap profile (after a collection) and the
// goroutine count of a process serving net/http/pprof at base.
func readHeapSplit(ctx context.Context, base string) (heapSplit, error) {
	var h heapSplit
	err := getText(ctx, base+"/debug/pprof/heap?debug=1&gc=1", func(r io.Reader) error {
		body, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if h.Server, h.Other, err = parseHeapProfile(bytes.NewReader(body)); err != nil {
			return err
		}
		h.Stacks, err = memStat(body, "Stack")
		return err
	})
	if err != nil {
		return h, err
	}
	err = getText(ctx, base+"/debug/pprof/goroutine?debug=1", func(r io.Reader) error {
		line, err := bufio.NewReader(r).ReadString('\n')
		if err != nil {
			return err
		}
		// "goroutine profile: total 1234"
		_, total, ok := strings.Cut(strings.TrimSpace(line), "total ")
		if !ok {
			return fmt.Errorf("goroutine profile starts with %q", line)
		}
		h.Goroutines, err = strconv.Atoi(total)
		return err
	})
	return h, err
}

func getText(ctx context.Context, url string, read func(io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return read(resp.Body)
}

// parseHeapProfile sums the in-use bytes of a heap profile in the text
// format (debug=1), split by whether a record's stack runs through the
// NATS server. The profile samples one allocation per rate bytes; each
// record is scaled back up as the pprof tool does.
func parseHeapProfile(r io.Reader) (server, other int64, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	if !sc.Scan() {
		return 0, 0, fmt.Errorf("empty heap profile")
	}
	// "heap profile: 1: 2 [3: 4] @ heap/1048576": Go writes twice its
	// sampling rate there, as the pprof tool expects.
	header := sc.Text()
	_, rateText, ok := strings.Cut(header, "@ heap/")
	rate, perr := strconv.ParseFloat(strings.TrimSpace(rateText), 64)
	if !ok || perr != nil || rate <= 0 {
		return 0, 0, fmt.Errorf("heap profile header %q", header)
	}
	rate /= 2
	var bytes float64
	inServer := false
	flush := func() {
		if inServer {
			server += int64(bytes)
		} else {
			other += int64(bytes)
		}
		bytes, inServer = 0, false
	}
	inRecord := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# runtime.MemStats"):
			if inRecord {
				flush()
			}
			return server, other, nil
		case strings.HasPrefix(line, "#"):
			if strings.Contains(line, serverCode) {
				inServer = true
			}
		case strings.Contains(line, " @ "):
			if inRecord {
				flush()
			}
			inRecord = true
			bytes = scaledInUse(line, rate)
		}
	}
	if inRecord {
		flush()
	}
	return server, other, sc.Err()
}

// memStat reads the in-use figure of a heap profile's MemStats trailer
// line "# <name> = <in use> / <from the system>".
func memStat(profile []byte, name string) (int64, error) {
	prefix := "# " + name + " = "
	for line := range strings.Lines(string(profile)) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			inUse, _, _ := strings.Cut(rest, " /")
			return strconv.ParseInt(strings.TrimSpace(inUse), 10, 64)
		}
	}
	return 0, fmt.Errorf("heap profile has no %q line", strings.TrimSpace(prefix))
}

// scaledInUse reads "objects: bytes [allocs: allocbytes] @ ..." and scales
// the in-use bytes for the sampling rate.
func scaledInUse(line string, rate float64) float64 {
	counts, _, _ := strings.Cut(line, "[")
	objText, bytesText, ok := strings.Cut(counts, ":")
	if !ok {
		return 0
	}
	objects, err1 := strconv.ParseFloat(strings.TrimSpace(objText), 64)
	bytes, err2 := strconv.ParseFloat(strings.TrimSpace(bytesText), 64)
	if err1 != nil || err2 != nil || objects == 0 {
		return 0
	}
	avg := bytes / objects
	return bytes / (1 - math.Exp(-avg/rate))
}

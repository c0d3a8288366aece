package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/a2amesh/a2amesh/internal/cliusage"

	"github.com/mattn/go-isatty"
)

// Output formats of the admin verbs (--output / -o).
const (
	outputAuto   = ""                   // table on a terminal, json otherwise
	outputTable  = cliusage.OutputTable // for people: columns, or one field per line
	outputJSON   = cliusage.OutputJSON  // for scripts: the API's answer, indented
	outputJSONL  = cliusage.OutputJSONL // for scripts and streams: one JSON value per line
	outputPretty = "pretty"             // events tail: each event indented
)

var outputFormats = []string{outputTable, outputJSON, outputJSONL, outputPretty}

// listing marks a command that lists though not named list: it takes -o
// like every list (cliusage.Listing).
var listing = map[string]string{cliusage.ListingAnnotation: "true"}

// format is the output format in effect: --output, else table when
// standard output is a terminal and json when it is not (a pipe, a file).
func (g *globals) format() string {
	if g.output != outputAuto {
		return g.output
	}
	if isatty.IsTerminal(os.Stdout.Fd()) {
		return outputTable
	}
	return outputJSON
}

// decodeJSON reads an API answer keeping numbers as they were written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// writeJSON writes v as JSON without HTML escaping (a subject such as
// mesh.evt.<id>.> stays readable and pastable), indented or on one line.
func writeJSON(w io.Writer, v any, indent bool) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	return enc.Encode(v)
}

// print writes an answer in the format in effect.
func (g *globals) print(v any) error {
	// Go values (typed structs) go through JSON once, so every format
	// sees the field names the API uses.
	if _, ok := v.(json.RawMessage); !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		v = json.RawMessage(b)
	}
	doc, err := decodeJSON(v.(json.RawMessage))
	if err != nil {
		return err
	}
	if doc, err = selectFields(doc, g.fields); err != nil {
		return err
	}
	switch g.format() {
	case outputJSONL:
		if items, ok := listOf(doc); ok {
			for _, it := range items {
				if err := writeJSON(g.out, it, false); err != nil {
					return err
				}
			}
			return nil
		}
		return writeJSON(g.out, doc, false)
	case outputTable:
		return printTableOf(g.out, doc, time.Now(), g.fields)
	default:
		return writeJSON(g.out, doc, true)
	}
}

// listOf returns the items of a list answer: an object whose only array
// member is the list ({"agents": [...]}, {"task_runs": [...], "next_cursor"}).
func listOf(doc any) ([]any, bool) {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, false
	}
	var items []any
	found := 0
	for _, v := range m {
		if a, ok := v.([]any); ok {
			items = a
			found++
		}
	}
	return items, found == 1
}

// selectFields keeps only fields (--fields) of each item of a list answer,
// or of a single answer; the list's other members (a cursor) stay.
func selectFields(doc any, fields []string) (any, error) {
	if len(fields) == 0 {
		return doc, nil
	}
	m, _ := doc.(map[string]any)
	items, ok := listOf(doc)
	if !ok {
		if m == nil {
			return doc, nil
		}
		if err := cliusage.CheckFields([]map[string]any{m}, fields); err != nil {
			return nil, err
		}
		return cliusage.SelectFields(m, fields), nil
	}
	rows := make([]map[string]any, 0, len(items))
	for _, it := range items {
		if row, ok := it.(map[string]any); ok {
			rows = append(rows, row)
		}
	}
	if err := cliusage.CheckFields(rows, fields); err != nil {
		return nil, err
	}
	selected := make([]any, len(items))
	for i, it := range items {
		if row, ok := it.(map[string]any); ok {
			it = cliusage.SelectFields(row, fields)
		}
		selected[i] = it
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if _, isList := v.([]any); isList {
			v = selected
		}
		out[k] = v
	}
	return out, nil
}

// columns are the fields a table shows for the items of each list, in
// order; lists not named here show their items' first scalar fields.
var columns = map[string][]string{
	"agents":     {"agent_id", "name", "home_region", "public", "created_at"},
	"task_runs":  {"task_run_id", "target_agent_id", "status", "task_type", "created_at"},
	"runtimes":   {"runtime_id", "host_label", "state", "status", "last_heartbeat_at"},
	"consumers":  {"consumer_id", "name", "agent_id", "created_at"},
	"webhooks":   {"webhook_id", "url", "format", "agent_id", "secret_hint"},
	"deliveries": {"delivery_id", "event_type", "state", "attempt_count", "updated_at"},
	"days":       {"day", "agent_id", "runs", "input_tokens", "output_tokens", "cached_tokens", "cost_usd"},
}

// printTable writes a list as columns and anything else as one "field:
// value" line per field; times are short and local, as of now.
func printTable(w io.Writer, doc any, now time.Time) error {
	return printTableOf(w, doc, now, nil)
}

// printTableOf is printTable with the columns of a list given (--fields);
// none: those of the list's kind.
func printTableOf(w io.Writer, doc any, now time.Time, fields []string) error {
	cell := func(v any) string { return tableCell(v, now) }
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	m, _ := doc.(map[string]any)
	if items, ok := listOf(doc); ok {
		var name string
		for k, v := range m {
			if _, ok := v.([]any); ok {
				name = k
			}
		}
		cols := fields
		if cols == nil {
			cols = columns[name]
		}
		if cols == nil {
			cols = scalarKeys(items)
		}
		fmt.Fprintln(tw, strings.ToUpper(strings.Join(cols, "\t")))
		for _, it := range items {
			row, _ := it.(map[string]any)
			cells := make([]string, len(cols))
			for i, c := range cols {
				cells[i] = cell(row[c])
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		if len(items) == 0 {
			fmt.Fprintln(tw, "(none)")
		}
		for k, v := range m {
			if _, isList := v.([]any); !isList && cell(v) != "" {
				fmt.Fprintf(tw, "\n%s:\t%s\n", k, cell(v))
			}
		}
		return tw.Flush()
	}
	if m == nil {
		fmt.Fprintln(tw, cell(doc))
		return tw.Flush()
	}
	keys := fields
	if keys == nil {
		keys = make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	for _, k := range keys {
		fmt.Fprintf(tw, "%s:\t%s\n", k, cell(m[k]))
	}
	return tw.Flush()
}

// scalarKeys are up to six fields of the first item that are not objects
// or lists, in name order.
func scalarKeys(items []any) []string {
	if len(items) == 0 {
		return []string{"value"}
	}
	first, _ := items[0].(map[string]any)
	var keys []string
	for k, v := range first {
		switch v.(type) {
		case map[string]any, []any:
		default:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > 6 {
		keys = keys[:6]
	}
	return keys
}

// tableCell is one value as a table shows it: strings bare, times short
// and local (shortTime), objects and lists as compact JSON, nothing as "-".
func tableCell(v any, now time.Time) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return shortTime(t, now)
		}
		return x
	case json.Number:
		return x.String()
	case bool:
		return fmt.Sprint(x)
	default:
		var b bytes.Buffer
		_ = writeJSON(&b, x, false)
		return strings.TrimSpace(b.String())
	}
}

// shortTime is a time as a table shows it, in local time to the second:
// how long ago (or how soon) for a time of today, the date and time
// otherwise (2026-11-28 17:05:03). JSON keeps the API's RFC 3339.
func shortTime(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	ty, tm, td := t.Date()
	ny, nm, nd := now.Date()
	if ty != ny || tm != nm || td != nd {
		return t.Format(time.DateTime)
	}
	d := now.Sub(t).Round(time.Second)
	switch {
	case d < -time.Second:
		return "in " + roughly(-d)
	case d <= time.Second:
		return "now"
	}
	return roughly(d) + " ago"
}

// roughly is a duration in its largest unit: 42s, 5m, 3h.
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%dh", int(d.Hours()))
}

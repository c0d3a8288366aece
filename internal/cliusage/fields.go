package cliusage

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// FieldsFlag adds --fields to fs: the fields of each item a command prints
// (or of its one answer), in order, in every output format. Scripts take
// the few they need; tables show those columns.
func FieldsFlag(fs *pflag.FlagSet, p *[]string) {
	fs.StringSliceVar(p, "fields", nil, "print only these fields of each item, in this order (comma-separated), in every output format")
}

// SelectFields returns item with only fields, a field it lacks as nil; with
// no fields, item itself.
func SelectFields(item map[string]any, fields []string) map[string]any {
	if len(fields) == 0 || item == nil {
		return item
	}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		out[f] = item[f]
	}
	return out
}

// CheckFields refuses, as a wrong command line, a field that none of items
// has, naming the fields they have. With no items any field is taken:
// there is nothing to tell a misspelt name by.
func CheckFields(items []map[string]any, fields []string) error {
	if i := slices.IndexFunc(fields, func(f string) bool { return f == "" }); i >= 0 {
		return Usage(fmt.Errorf("--fields: field %d is empty", i+1))
	}
	if len(items) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, it := range items {
		for k := range it {
			known[k] = true
		}
	}
	for _, f := range fields {
		if !known[f] {
			names := make([]string, 0, len(known))
			for k := range known {
				names = append(names, k)
			}
			sort.Strings(names)
			return Usage(fmt.Errorf("--fields: no field %q; the items have %s", f, strings.Join(names, ", ")))
		}
	}
	return nil
}

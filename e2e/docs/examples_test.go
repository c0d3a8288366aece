package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every shell example of the documents is run by a test of this package as
// it is written, or is marked in the document, right before its fence, as
// one the test does not run and why:
//
//	<!-- doc-test: skip (needs a running OpenClaw gateway) -->
//	```sh
//
// The test fails for an example that is neither, so a new example is run or
// says plainly why it is not. The programs a marked example calls are still
// asked for their help with its verbs and flags, so those cannot drift.

// shellLanguages are the fence languages that mark a shell example.
var shellLanguages = []string{"sh", "bash", "shell", "console"}

// skipMarker is the marker's form; its reason may not be empty.
var skipMarker = regexp.MustCompile(`^<!-- doc-test: skip \((.*\S.*)\) -->$`)

// example is one shell block of a document.
type example struct {
	file string
	line int // of the opening fence
	text string
	// skip is why the doc test does not run it, from its marker; empty
	// for an example the tests run.
	skip string
}

func (e example) String() string { return fmt.Sprintf("%s:%d", e.file, e.line) }

// examples returns the shell blocks of a document (a path from the module
// root), each with its marker's reason. A malformed marker, or one that is
// not right before a shell block, fails the test.
func examples(t *testing.T, file string) []example {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	var cur *example
	fenced := false
	marker, markerLine := "", 0
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fenced && trimmed == "```":
			fenced = false
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
		case fenced:
			if cur != nil {
				cur.text += line + "\n"
			}
		case strings.HasPrefix(trimmed, "```"):
			fenced = true
			if slices.Contains(shellLanguages, strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))) {
				cur = &example{file: file, line: i + 1, skip: marker}
				marker = ""
				continue
			}
		case strings.HasPrefix(trimmed, "<!-- doc-test"):
			m := skipMarker.FindStringSubmatch(trimmed)
			if m == nil {
				t.Errorf("%s:%d: a doc-test marker reads <!-- doc-test: skip (why the test does not run the example) -->, got %s", file, i+1, trimmed)
				continue
			}
			marker, markerLine = m[1], i+1
			continue
		case trimmed == "":
			continue
		}
		if marker != "" {
			t.Errorf("%s:%d: the doc-test marker is not right before a shell example", file, markerLine)
			marker = ""
		}
	}
	if marker != "" {
		t.Errorf("%s:%d: the doc-test marker is not right before a shell example", file, markerLine)
	}
	return out
}

// find returns the example of all that contains marker.
func find(t *testing.T, all []example, marker string) example {
	t.Helper()
	for _, e := range all {
		if strings.Contains(e.text, marker) {
			return e
		}
	}
	t.Fatalf("no example contains %q", marker)
	return example{}
}

// accountFor fails for an example that is neither run (ran holds the
// opening lines of those a test ran) nor marked, and for a marked one that
// a test runs all the same; it asks the programs each marked example calls
// for their help with its verbs and flags.
func accountFor(t *testing.T, all []example, ran map[int]bool) {
	t.Helper()
	for _, e := range all {
		switch {
		case ran[e.line] && e.skip != "":
			t.Errorf("%s is marked as not run by the doc test (%s), but a test runs it: drop the marker", e, e.skip)
		case !ran[e.line] && e.skip == "":
			t.Errorf("%s is neither run by the doc test nor marked <!-- doc-test: skip (why) --> right before its fence:\n%s", e, e.text)
		case e.skip != "":
			checkFlags(t, e)
		}
	}
}

// ourProgram matches a command that runs one of the three programs, as
// built into bin/ or as installed on PATH.
var ourProgram = regexp.MustCompile(`^(?:bin/)?(a2a-platform|a2a-runtime|a2a-adapter)$`)

// placeholderWord is a value the reader fills in (<agent_id>, …).
var placeholderWord = regexp.MustCompile(`<[^>]+>`)

// checkFlags runs each command of e that calls one of the programs with
// --help added before its arguments for the adapter: a mistyped verb or
// flag is an error there, so the example's words are the programs' own
// even where the example itself cannot run here.
func checkFlags(t *testing.T, e example) {
	t.Helper()
	for _, c := range commands(e.text) {
		for _, part := range strings.Split(c, "&&") {
			words := shellWords(placeholderWord.ReplaceAllString(part, "x"))
			for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
				words = words[1:]
			}
			if len(words) == 0 {
				continue
			}
			m := ourProgram.FindStringSubmatch(words[0])
			if m == nil {
				continue
			}
			args := slices.DeleteFunc(words[1:], func(w string) bool { return w == "&" })
			if dash := slices.Index(args, "--"); dash >= 0 {
				args = args[:dash]
			}
			args = append(args, "--help")
			out, err := helpOf(t, m[1], args)
			if err != nil {
				t.Errorf("%s: %s %s (the marked example's command with --help) failed: %v\n%s", e, m[1], strings.Join(args, " "), err, out)
			}
		}
	}
}

// shellWords splits a command into words as sh does for the simple
// commands of the docs: whitespace outside quotes separates, quotes are
// removed.
func shellWords(c string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range c {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

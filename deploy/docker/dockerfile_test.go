// Package docker_test checks the platform's container image as far as it can
// be checked without a container engine: the Dockerfile's own build command
// makes a static a2a-platform that runs, everything it copies is in the
// build context or made by its build stage, and it runs as a non-root user
// on a static base.
package docker_test

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// root is the repository root: the build context.
var root = filepath.Join("..", "..")

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// stage is one FROM and the instructions under it.
type stage struct {
	from   instruction
	image  string // the base image, global ARGs expanded
	name   string // after AS
	instrs []instruction
}

// dockerfile is the parsed deploy/docker/Dockerfile.
type dockerfile struct {
	globalArgs map[string]string
	stages     []*stage
}

func parseDockerfile(t *testing.T) *dockerfile {
	t.Helper()
	f, err := os.Open("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var instrs []instruction
	var cur *instruction
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue // comments are dropped inside continuations too
		}
		if cur == nil {
			cmd, args, _ := strings.Cut(line, " ")
			cur = &instruction{line: n, cmd: strings.ToUpper(cmd)}
			line = args
		}
		body, cont := strings.CutSuffix(line, `\`)
		cur.args = strings.TrimSpace(cur.args + " " + strings.TrimSpace(body))
		if !cont {
			instrs = append(instrs, *cur)
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("Dockerfile:%d: the last instruction continues past the end", cur.line)
	}
	d := &dockerfile{globalArgs: map[string]string{}}
	for _, in := range instrs {
		switch {
		case in.cmd == "FROM":
			fields := withoutFlags(in.args)
			s := &stage{from: in, image: d.expand(fields[0])}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				s.name = fields[2]
			}
			d.stages = append(d.stages, s)
		case len(d.stages) == 0 && in.cmd == "ARG":
			name, value, _ := strings.Cut(in.args, "=")
			d.globalArgs[name] = strings.Trim(value, `"`)
		case len(d.stages) == 0:
			t.Fatalf("Dockerfile:%d: %s before the first FROM", in.line, in.cmd)
		default:
			s := d.stages[len(d.stages)-1]
			s.instrs = append(s.instrs, in)
		}
	}
	if len(d.stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and the image", len(d.stages))
	}
	return d
}

// expand replaces ${NAME} and $NAME of global ARGs.
func (d *dockerfile) expand(s string) string {
	return os.Expand(s, func(name string) string { return d.globalArgs[name] })
}

// stage returns the stage named name.
func (d *dockerfile) stage(t *testing.T, name string) *stage {
	t.Helper()
	for _, s := range d.stages {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("Dockerfile has no stage %q", name)
	return nil
}

// final is the stage the image is.
func (d *dockerfile) final() *stage { return d.stages[len(d.stages)-1] }

// all returns the stage's instructions of kind cmd.
func (s *stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// withoutFlags splits an instruction's arguments into fields and drops its
// leading --flags (--mount=..., --from=..., --platform=...).
func withoutFlags(args string) []string {
	fields := strings.Fields(args)
	for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
		fields = fields[1:]
	}
	return fields
}

// flag returns the value of an instruction's --name=value flag.
func flag(in instruction, name string) string {
	for _, f := range strings.Fields(in.args) {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v
		}
		if !strings.HasPrefix(f, "--") {
			break
		}
	}
	return ""
}

// runCommand is a RUN's shell command, without its --flags.
func runCommand(in instruction) string { return strings.Join(withoutFlags(in.args), " ") }

var outputFlag = regexp.MustCompile(`(?:^|\s)-o\s+(\S+)`)

// buildRun is the build stage's RUN that builds a2a-platform, and the file
// it writes.
func buildRun(t *testing.T, d *dockerfile) (instruction, string) {
	t.Helper()
	for _, in := range d.stage(t, "build").all("RUN") {
		c := runCommand(in)
		if strings.Contains(c, "go build") && strings.Contains(c, "./cmd/a2a-platform") {
			m := outputFlag.FindStringSubmatch(c)
			if m == nil {
				t.Fatalf("Dockerfile:%d: the platform's build names no -o output", in.line)
			}
			return in, m[1]
		}
	}
	t.Fatal("the build stage has no RUN that builds ./cmd/a2a-platform")
	return instruction{}, ""
}

var (
	distRun  = regexp.MustCompile(`(?:^|\s)deploy/dist\.sh\s+(\S+)`)
	mkdirRun = regexp.MustCompile(`^mkdir -p (\S+)$`)
)

// buildOutputs are the paths the build stage's RUNs write: the platform,
// the dist.sh downloads folder and the empty data folder.
func buildOutputs(t *testing.T, d *dockerfile) map[string]string {
	t.Helper()
	_, platform := buildRun(t, d)
	out := map[string]string{platform: "platform"}
	for _, in := range d.stage(t, "build").all("RUN") {
		if m := distRun.FindStringSubmatch(runCommand(in)); m != nil {
			out[m[1]] = "downloads"
		}
		if m := mkdirRun.FindStringSubmatch(runCommand(in)); m != nil {
			out[m[1]] = "data"
		}
	}
	return out
}

// TestDockerfile_BuildCommandMakesAStaticPlatformThatPrintsItsVersion runs
// the build stage's own command for a2a-platform (taken from the
// Dockerfile, only its output folder moved) and checks that the program is
// statically linked, was built without cgo and with -trimpath, and prints
// the VERSION the build was given.
func TestDockerfile_BuildCommandMakesAStaticPlatformThatPrintsItsVersion(t *testing.T) {
	t.Parallel()
	d := parseDockerfile(t)
	in, out := buildRun(t, d)
	cmd := runCommand(in)
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("Dockerfile:%d: the platform's build lacks %s: %s", in.line, want, cmd)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, filepath.Base(out))
	cmd = strings.Replace(cmd, out, bin, 1)
	const version = "v0.0.0-image-test"
	build := exec.Command("sh", "-c", cmd)
	build.Dir = root
	// The ARGs the Dockerfile declares, as RUN sees them; the image is linux.
	build.Env = append(os.Environ(), "TARGETOS=linux", "TARGETARCH="+runtime.GOARCH, "VERSION="+version)
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("Dockerfile:%d: %s: %v\n%s", in.line, cmd, err, b)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the image's a2a-platform has a %v program header: it is dynamically linked", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the image's a2a-platform needs shared libraries %v", libs)
	}
	if f.Section(".dynamic") != nil || f.Section(".interp") != nil {
		t.Error("the image's a2a-platform has a .dynamic or .interp section")
	}

	if runtime.GOOS != "linux" {
		return // a linux program; its version line is checked where it runs
	}
	b, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("a2a-platform --version: %v\n%s", err, b)
	}
	if want := "a2a-platform version " + version + " ("; !strings.HasPrefix(string(b), want) {
		t.Fatalf("a2a-platform --version printed %q, want it to begin %q", b, want)
	}
}

// TestDockerfile_CopiesWhatTheContextAndTheBuildStageHold: every COPY from
// the build context names paths that exist and that .dockerignore keeps;
// every COPY from the build stage names what a RUN of that stage writes;
// the entry point is the copied platform and the downloads folder it serves
// is the copied dist.sh output.
func TestDockerfile_CopiesWhatTheContextAndTheBuildStageHold(t *testing.T) {
	t.Parallel()
	d := parseDockerfile(t)
	ignore := readDockerignore(t)
	outputs := buildOutputs(t, d)
	dest := map[string]string{} // what ("platform", "downloads") -> where in the image
	for _, s := range d.stages {
		for _, in := range s.all("COPY") {
			fields := withoutFlags(in.args)
			if len(fields) < 2 {
				t.Fatalf("Dockerfile:%d: COPY %s", in.line, in.args)
			}
			srcs, to := fields[:len(fields)-1], fields[len(fields)-1]
			from := flag(in, "from")
			for _, src := range srcs {
				switch from {
				case "":
					if _, err := os.Stat(filepath.Join(root, src)); err != nil {
						t.Errorf("Dockerfile:%d: COPY %s: %v", in.line, src, err)
					}
					if ignore.excludes(src) {
						t.Errorf("Dockerfile:%d: COPY %s: .dockerignore excludes it", in.line, src)
					}
				case "build":
					what, ok := outputs[src]
					if !ok {
						t.Errorf("Dockerfile:%d: COPY --from=build %s: no RUN of the build stage writes it (it writes %v)", in.line, src, outputs)
					}
					dest[what] = to
				default:
					t.Errorf("Dockerfile:%d: COPY --from=%s: no such stage", in.line, from)
				}
			}
		}
	}
	if info, err := os.Stat(filepath.Join(root, "deploy", "dist.sh")); err != nil || info.Mode()&0o111 == 0 {
		t.Errorf("deploy/dist.sh, which the build stage runs, is not an executable file: %v", err)
	}

	final := d.final()
	entry := final.all("ENTRYPOINT")
	if len(entry) != 1 || !strings.HasPrefix(entry[0].args, `["`+dest["platform"]+`"`) {
		t.Errorf("ENTRYPOINT %v, want the copied platform %q", entry, dest["platform"])
	}
	env := map[string]string{}
	for _, in := range final.all("ENV") {
		for _, kv := range strings.Fields(in.args) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	for name, what := range map[string]string{"A2A_MESH_DOWNLOADS_DIR": "downloads", "A2A_MESH_DATA_DIR": "data"} {
		if env[name] == "" || env[name] != dest[what] {
			t.Errorf("%s is %q, want the copied %s folder %q", name, env[name], what, dest[what])
		}
	}
	if user := final.all("USER"); len(user) > 0 {
		for _, in := range final.all("COPY") {
			if withoutFlags(in.args)[len(withoutFlags(in.args))-1] == dest["data"] && flag(in, "chown") != user[len(user)-1].args {
				t.Errorf("Dockerfile:%d: the data folder is owned by %q, the image runs as %q: up could not write it", in.line, flag(in, "chown"), user[len(user)-1].args)
			}
		}
	}
}

// TestDockerfile_ImageRunsAsNonRootOnAStaticBase: the image is distroless
// static (or scratch) and runs as a numeric non-root user, and the build
// stage's Go is the release go.mod names.
func TestDockerfile_ImageRunsAsNonRootOnAStaticBase(t *testing.T) {
	t.Parallel()
	d := parseDockerfile(t)
	final := d.final()
	if !strings.HasPrefix(final.image, "gcr.io/distroless/static") && final.image != "scratch" {
		t.Errorf("the image is based on %q, want distroless static or scratch", final.image)
	}
	users := final.all("USER")
	if len(users) == 0 {
		t.Fatal("the image sets no USER: it would run as root")
	}
	user := users[len(users)-1].args
	uid, gid, _ := strings.Cut(user, ":")
	if !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(uid) || (gid != "" && gid == "0") {
		t.Errorf("USER %q: want a numeric non-root user (Kubernetes runAsNonRoot checks a numeric id)", user)
	}

	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	build := d.stage(t, "build")
	if want := "golang:" + string(goLine[1]) + "-"; !strings.HasPrefix(build.image, want) {
		t.Errorf("the build stage runs %q, want Go %s as go.mod says (%s…)", build.image, goLine[1], want)
	}
}

// TestDockerignore_KeepsEveryFileTheBuildReads: no Go file, embedded file
// or script the image's programs are built from is left out of the build
// context.
func TestDockerignore_KeepsEveryFileTheBuildReads(t *testing.T) {
	t.Parallel()
	ignore := readDockerignore(t)
	const module = "github.com/a2amesh/a2amesh"
	list := exec.Command("go", "list", "-deps", "-f",
		`{{if .Module}}{{if eq .Module.Path "`+module+`"}}{{.Dir}}|{{join .GoFiles ","}},{{join .IgnoredGoFiles ","}},{{join .EmbedFiles ","}}{{end}}{{end}}`,
		"./cmd/a2a-platform", "./cmd/a2a-runtime", "./cmd/a2a-adapter")
	list.Dir = root
	b, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"go.mod", "go.sum", "deploy/dist.sh"}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		dir, names, _ := strings.Cut(line, "|")
		rel, err := filepath.Rel(abs, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range strings.Split(names, ",") {
			if name != "" {
				files = append(files, filepath.ToSlash(filepath.Join(rel, name)))
			}
		}
	}
	if len(files) < 100 {
		t.Fatalf("go list found only %d files of the build", len(files))
	}
	for _, f := range files {
		if ignore.excludes(f) {
			t.Errorf(".dockerignore excludes %s, which the image's build reads", f)
		}
	}
}

// TestDockerignore_MatchesAsTheBuilderDoes: the matcher the tests above use
// follows the builder's rules: patterns are anchored at the context root,
// exclude whole folders, ** crosses folders and ! takes a path back.
func TestDockerignore_MatchesAsTheBuilderDoes(t *testing.T) {
	t.Parallel()
	ig := parseDockerignore(t, "bin\n/dist\n*.test\n**/node_modules\ndocs\n!docs/keep.md\n")
	for path, want := range map[string]bool{
		"bin":                          true,
		"bin/a2a-platform":             true,
		"cmd/bin/main.go":              false,
		"dist/SHA256SUMS":              true,
		"x.test":                       true,
		"cmd/x.test":                   false,
		"node_modules/a/index.js":      true,
		"e2e/a2ajs/node_modules/b.js":  true,
		"docs/api.md":                  true,
		"docs/keep.md":                 false,
		"cmd/a2a-platform/main.go":     false,
		"services/gateway/web/app.css": false,
	} {
		if got := ig.excludes(path); got != want {
			t.Errorf("excludes(%q) = %v, want %v", path, got, want)
		}
	}
}

// dockerignore is a parsed .dockerignore.
type dockerignore []ignorePattern

type ignorePattern struct {
	re     *regexp.Regexp
	except bool
}

func readDockerignore(t *testing.T) dockerignore {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	return parseDockerignore(t, string(b))
}

func parseDockerignore(t *testing.T, text string) dockerignore {
	t.Helper()
	var out dockerignore
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := ignorePattern{}
		if rest, ok := strings.CutPrefix(line, "!"); ok {
			p.except, line = true, rest
		}
		line = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(line)), "/")
		if strings.ContainsAny(line, `[\`) {
			t.Fatalf(".dockerignore pattern %q: character classes and escapes are not understood by this test", line)
		}
		p.re = regexp.MustCompile("^" + globToRegexp(line) + "$")
		out = append(out, p)
	}
	return out
}

// globToRegexp translates the builder's glob: * within a folder name, ? one
// character, ** any number of folders.
func globToRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// excludes says whether the builder leaves path (slash-separated, relative
// to the context root) out: the last pattern that matches it or a folder
// above it decides.
func (ig dockerignore) excludes(path string) bool {
	path = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(path)), "./")
	if path == "." {
		return false
	}
	parts := strings.Split(path, "/")
	excluded := false
	for _, p := range ig {
		if slices.ContainsFunc(prefixes(parts), p.re.MatchString) {
			excluded = !p.except
		}
	}
	return excluded
}

// prefixes returns a/b/c as a, a/b, a/b/c.
func prefixes(parts []string) []string {
	out := make([]string, len(parts))
	for i := range parts {
		out[i] = strings.Join(parts[:i+1], "/")
	}
	return out
}

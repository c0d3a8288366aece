// Package web is the page people use, served by the platform itself: a shell
// (index.html), a style sheet and plain JavaScript modules, embedded in the
// binary, with no build step and nothing loaded from elsewhere. The
// libraries it uses (assets/third_party: the Markdown renderer and the HTML
// sanitizer) are their published ES module files, vendored at pinned
// versions with their licenses. The page
// drives the platform's REST API and follows its event stream with the
// sign-in session's cookie; this package only serves the files.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var embedded embed.FS

// thirdParty is the folder of vendored libraries; its modules are served
// under their own names, beside the page's.
const thirdParty = "assets/third_party"

// ClientRoutes are the paths the page routes itself; each serves the shell,
// which shows the view of its path.
var ClientRoutes = []string{
	"/agents/{agentId}",
	"/tasks",
	"/tasks/{taskRunId}",
	"/integrations",
}

// contentSecurityPolicy allows the page only its own scripts, styles,
// images and connections: no inline script, no frame, no plugin.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Pages serves the shell, the assets and the sign-in failure page.
type Pages struct {
	shell  file
	assets map[string]file
	failed *template.Template
}

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	etag        string
	contentType string
}

// New loads the embedded files.
func New() *Pages {
	p := &Pages{assets: map[string]file{}}
	entries, err := fs.ReadDir(embedded, "assets")
	if err != nil {
		panic("web: embedded assets: " + err.Error())
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		p.assets[e.Name()] = load("assets/" + e.Name())
	}
	vendored, err := fs.ReadDir(embedded, thirdParty)
	if err != nil {
		panic("web: embedded third-party modules: " + err.Error())
	}
	// Only the modules: the licenses and the notes beside them are not
	// part of the page.
	for _, e := range vendored {
		if ext := path.Ext(e.Name()); ext != ".js" && ext != ".mjs" {
			continue
		}
		if _, dup := p.assets[e.Name()]; dup {
			panic("web: third-party module " + e.Name() + " has the name of a page asset")
		}
		p.assets[e.Name()] = load(thirdParty + "/" + e.Name())
	}
	p.shell = p.assets["index.html"]
	delete(p.assets, "index.html")
	p.failed = template.Must(template.New("signin-failed.html").Parse(string(p.assets["signin-failed.html"].body)))
	delete(p.assets, "signin-failed.html")
	return p
}

func load(name string) file {
	b, err := embedded.ReadFile(name)
	if err != nil {
		panic("web: embedded asset: " + err.Error())
	}
	sum := sha256.Sum256(b)
	ct := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".js", ".mjs":
		ct = "text/javascript; charset=utf-8"
	case ".css":
		ct = "text/css; charset=utf-8"
	case ".html":
		ct = "text/html; charset=utf-8"
	}
	return file{body: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, contentType: ct}
}

// ServeShell serves index.html, for the root and every client route.
func (p *Pages) ServeShell(w http.ResponseWriter, r *http.Request) {
	serve(w, r, p.shell)
}

// HasAsset reports whether name is one of the page's assets.
func (p *Pages) HasAsset(name string) bool {
	_, ok := p.assets[name]
	return ok
}

// ServeAsset serves GET /assets/{file}; the caller answers unknown names
// (see HasAsset).
func (p *Pages) ServeAsset(w http.ResponseWriter, r *http.Request) {
	serve(w, r, p.assets[r.PathValue("file")])
}

// SignInFailed answers a sign-in link that cannot be used, with a page
// saying why and how to get a new one.
func (p *Pages) SignInFailed(w http.ResponseWriter, status int, reason string) {
	var b bytes.Buffer
	if err := p.failed.Execute(&b, struct{ Reason string }{reason}); err != nil {
		http.Error(w, reason, status)
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func serve(w http.ResponseWriter, r *http.Request, f file) {
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Type", f.contentType)
	// Revalidated on every load (cheap, by ETag), so a new platform version
	// never runs with a stale script.
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	_, _ = w.Write(f.body)
}

func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// browserT is one headless Chromium with a fresh profile, driving the page
// like a person would; each step can leave a screenshot.
type browserT struct {
	t     *testing.T
	ctx   context.Context
	shots *shotDir

	mu       sync.Mutex
	problems []string
	watching sync.WaitGroup
}

// newBrowser starts Chromium with the flags the checks call for and a fresh
// user-data dir. JavaScript exceptions and Content-Security-Policy refusals
// fail the test.
func newBrowser(t *testing.T) *browserT {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		t.Fatalf("%s is missing: install the Debian packages chromium and chromium-driver (.ci/run does)", chromium)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	b := &browserT{t: t, ctx: ctx, shots: screenshotDir(t)}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	messages := chromedp.Console(ctx)
	b.watching.Add(1)
	go func() {
		defer b.watching.Done()
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				b.mu.Lock()
				b.problems = append(b.problems, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m.String()))
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		b.watching.Wait()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("the page reported: %s", p)
		}
	})
	return b
}

// shotDir is a test's folder of screenshots, numbered in the order taken by
// all of its browsers.
type shotDir struct {
	path string
	t    *testing.T
	mu   sync.Mutex
	n    int
}

var shotDirs sync.Map // test name -> *shotDir

// screenshotDir is this test's folder of screenshots: emptied when the test
// first asks for it, made when the first screenshot is taken.
func screenshotDir(t *testing.T) *shotDir {
	t.Helper()
	if d, ok := shotDirs.Load(t.Name()); ok {
		return d.(*shotDir)
	}
	root := os.Getenv("A2A_MESH_TEST_OUTPUT")
	if root == "" {
		root = "screenshots"
	}
	path, err := filepath.Abs(filepath.Join(root, t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(path)
	d := &shotDir{path: path, t: t}
	shotDirs.Store(t.Name(), d)
	t.Cleanup(func() { shotDirs.Delete(t.Name()) })
	return d
}

func (d *shotDir) next(name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == 0 {
		if err := os.MkdirAll(d.path, 0o755); err != nil {
			d.t.Errorf("screenshots: %v", err)
		}
		d.t.Logf("screenshots: %s", d.path)
	}
	d.n++
	return filepath.Join(d.path, fmt.Sprintf("%02d-%s.png", d.n, strings.Trim(shotName.ReplaceAllString(strings.ToLower(name), "-"), "-")))
}

// do runs actions with a deadline.
func (b *browserT) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitStart)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot("failed-" + what)
		b.t.Fatalf("%s: %v", what, err)
	}
}

// open loads a URL and waits for the page to show a heading.
func (b *browserT) open(url string) {
	b.t.Helper()
	b.do("open "+url, chromedp.Navigate(url))
	b.waitJS("a heading on "+url, `() => document.querySelector('main h1') !== null`)
}

// waitJS polls a predicate (a JavaScript function of args) until it holds.
func (b *browserT) waitJS(what, fn string, args ...any) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, waitStart)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.PollFunction[bool](fn, chromedp.WithPollingArgs(args...),
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(waitStart))); err != nil {
		b.shot("failed-wait")
		b.t.Fatalf("waiting for %s: %v\npage text:\n%s", what, err, tail(b.textOf("body"), 3000))
	}
}

// waitText waits until the element sel contains text.
func (b *browserT) waitText(sel, text string) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf("%q in %s", text, sel),
		`(sel, text) => { const el = document.querySelector(sel); return !!el && el.textContent.includes(text); }`, sel, text)
}

// textOf returns the text of the first element matching sel, or "".
func (b *browserT) textOf(sel string) string {
	s, _ := evaluate[string](b, fmt.Sprintf(`(() => { const el = document.querySelector(%q); return el ? el.innerText : ''; })()`, sel))
	return s
}

// js evaluates an expression, failing the test on error.
func js[T any](b *browserT, expr string) T {
	b.t.Helper()
	v, err := evaluate[T](b, expr)
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func evaluate[T any](b *browserT, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, waitStart)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

func (b *browserT) click(sel string) {
	b.t.Helper()
	b.do("click "+sel, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
}

func (b *browserT) typeInto(sel, text string) {
	b.t.Helper()
	b.do("type into "+sel, chromedp.SendKeys(chromedp.CSS(sel), text, chromedp.NodeVisible))
}

// key presses keys on whatever has the focus.
func (b *browserT) key(keys string) {
	b.t.Helper()
	b.do("press keys", chromedp.KeyEvent(keys))
}

var shotName = regexp.MustCompile(`[^a-z0-9]+`)

// shot saves a screenshot of the whole page as NN-name.png.
func (b *browserT) shot(name string) {
	file := b.shots.next(name)
	ctx, cancel := context.WithTimeout(b.ctx, waitStart)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
	}
}

// download clicks sel and returns the bytes of the file the browser saved.
func (b *browserT) download(sel string) []byte {
	b.t.Helper()
	dir := b.t.TempDir()
	ctx, cancel := context.WithTimeout(b.ctx, waitStart)
	defer cancel()
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: new(true),
	}); err != nil {
		b.t.Fatalf("allow downloads: %v", err)
	}
	// Subscribed before the click, so the completion cannot be missed.
	progress := chromedp.BrowserEvents(ctx, browser.DownloadProgress)
	b.click(sel)
	for ev, err := range progress {
		if err != nil {
			b.t.Fatalf("the download of %s never completed: %v", sel, err)
		}
		if ev.State == browser.DownloadProgressStateCanceled {
			b.t.Fatalf("the download of %s was canceled", sel)
		}
		if ev.State == browser.DownloadProgressStateCompleted {
			content, err := os.ReadFile(filepath.Join(dir, ev.GUID))
			if err != nil {
				b.t.Fatalf("read the download: %v", err)
			}
			return content
		}
	}
	return nil
}

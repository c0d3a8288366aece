package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// a11yCheck is an accessibility smoke check run in the page: every form
// control has a label, the landmarks exist, images have alt text, buttons
// and links have a name, and visible text has enough contrast against its
// background (4.5:1, or 3:1 for large text), computed from the styles.
// It returns the problems found, one line each.
const a11yCheck = `(() => {
  const problems = [];
  const describe = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += '#' + el.id;
    if (typeof el.className === 'string' && el.className.trim()) s += '.' + el.className.trim().split(/\s+/).join('.');
    const text = (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 40);
    return text ? s + ' "' + text + '"' : s;
  };
  const shown = (el) => {
    const r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none';
  };
  if (!document.documentElement.lang) problems.push('<html> has no lang');
  if (!document.title.trim()) problems.push('the page has no title');
  for (const name of ['header', 'nav', 'main']) {
    if (!document.querySelector(name)) problems.push('no <' + name + '> landmark');
  }
  for (const el of document.querySelectorAll('input, select, textarea')) {
    if (el.type === 'hidden' || el.getAttribute('aria-hidden') === 'true') continue;
    const named = (el.labels && el.labels.length > 0 && [...el.labels].some((l) => l.textContent.trim())) ||
      (el.getAttribute('aria-label') || '').trim() || el.getAttribute('aria-labelledby');
    if (!named) problems.push('form field without a label: ' + describe(el));
  }
  for (const img of document.querySelectorAll('img')) {
    if (!img.hasAttribute('alt')) problems.push('image without alt: ' + img.getAttribute('src'));
  }
  for (const el of document.querySelectorAll('button, a[href]')) {
    if (!shown(el)) continue;
    const name = el.textContent.trim() || (el.getAttribute('aria-label') || '').trim() ||
      [...el.querySelectorAll('img[alt]')].some((i) => i.alt.trim());
    if (!name) problems.push('button or link without a name: ' + describe(el));
  }
  const parse = (c) => {
    const m = /rgba?\(([^)]+)\)/.exec(c || '');
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const over = (fg, bg) => ({ r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a), b: fg.b * fg.a + bg.b * (1 - fg.a), a: 1 });
  const luminance = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const backdrop = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.backgroundImage !== 'none') return null;
      const c = parse(cs.backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = { r: 255, g: 255, b: 255, a: 1 };
    for (let i = layers.length - 1; i >= 0; i--) bg = over(layers[i], bg);
    return bg;
  };
  const seen = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const el = walker.currentNode.parentElement;
    if (!el || seen.has(el) || !walker.currentNode.textContent.trim()) continue;
    seen.add(el);
    if (!shown(el) || el.closest('.visually-hidden, option, script, style, button[disabled], [aria-disabled="true"]')) continue;
    const cs = getComputedStyle(el);
    const bg = backdrop(el);
    const color = parse(cs.color);
    if (!bg || !color) continue;
    const fg = over(color, bg);
    const l1 = luminance(fg), l2 = luminance(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    const size = parseFloat(cs.fontSize);
    const large = size >= 24 || (Number(cs.fontWeight) >= 700 && size >= 18.66);
    const need = large ? 3 : 4.5;
    if (ratio < need) {
      problems.push('contrast ' + ratio.toFixed(2) + ':1 (needs ' + need + ':1): ' + describe(el) + ' ' + cs.color + ' on rgb(' +
        [bg.r, bg.g, bg.b].map(Math.round).join(', ') + ')');
    }
  }
  return problems;
})()`

// checkA11y runs the smoke check on the page as it is and fails the test
// with every problem listed.
func (b *browserT) checkA11y(page string) {
	b.t.Helper()
	problems := js[[]string](b, a11yCheck)
	if len(problems) > 0 {
		b.t.Errorf("accessibility problems on %s:\n  %s", page, strings.Join(problems, "\n  "))
	}
}

// TestA11yCheck_FindsWhatItLooksFor shows the smoke check on a page made
// of the mistakes it looks for, so a clean result elsewhere means something.
func TestA11yCheck_FindsWhatItLooksFor(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, `<!doctype html><html><head><title>bad</title></head><body>
<div><input id="q"><select><option>x</option></select><textarea></textarea>
<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw="><button></button>
<p id="faint" style="color:#bbbbbb;background:#ffffff">hard to read</p>
<p style="color:#767676">just enough</p></div></body></html>`)
	}))
	defer bad.Close()
	b := newBrowser(t)
	b.do("open the bad page", chromedp.Navigate(bad.URL))
	problems := strings.Join(js[[]string](b, a11yCheck), "\n")
	for _, want := range []string{"<html> has no lang", "no <header> landmark", "no <nav> landmark", "no <main> landmark",
		"form field without a label: input#q", "form field without a label: select", "form field without a label: textarea",
		"image without alt", "button or link without a name: button", `p#faint "hard to read"`} {
		if !strings.Contains(problems, want) {
			t.Errorf("the check missed %q; it found:\n%s", want, problems)
		}
	}
	if strings.Contains(problems, "just enough") {
		t.Errorf("the check refused text of 4.54:1:\n%s", problems)
	}
}

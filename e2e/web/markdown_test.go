package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2amesh/a2amesh/internal/platform"
	"github.com/a2amesh/a2amesh/internal/testkit/meshtest"
)

// hostileMarkdown tries every way Markdown or the HTML in it could run
// script or load something; each attempt would set window.__ran.
const hostileMarkdown = "# Hostile\n\n" +
	"<img src=x onerror=\"window.__ran = 'img'\">\n\n" +
	"<script>window.__ran = 'script'</script>\n\n" +
	"<svg onload=\"window.__ran = 'svg'\"></svg>\n\n" +
	"<iframe src=\"javascript:parent.__ran = 'iframe'\"></iframe>\n\n" +
	"<a href=\"javascript:window.__ran = 'raw link'\">raw link</a>\n\n" +
	"<p style=\"color: red\" onclick=\"window.__ran = 'click'\">styled</p>\n\n" +
	"<form action=\"https://example.com/\"><input name=\"password\"></form>\n\n" +
	"[markdown link](javascript:window.__ran='markdown%20link')\n\n" +
	"![tracker](https://example.com/pixel.png)\n\n" +
	"[a real link](https://example.com/docs)\n"

// TestWeb_MarkdownArtifactsRenderTablesAndRunNothing: a Markdown artifact
// renders as GitHub does, tables included, and neither an artifact nor the
// agent's answer can run script, load anything or link to javascript:.
func TestWeb_MarkdownArtifactsRenderTablesAndRunNothing(t *testing.T) {
	p := meshtest.StartPlatform(t, func(c *platform.Config) { c.HeartbeatTimeout, c.Lease = time.Minute, time.Minute })
	agent := p.CreateAgent("Reporter")
	rt, run := p.HeldRun(t, agent.ID, "the numbers")
	upload := func(name, content string) {
		p.Send(t, meshtest.Request{Method: http.MethodPost, Path: "/task-runs/" + run.ID + "/artifacts", RuntimeToken: rt.RuntimeToken,
			JSON: map[string]any{"filename": name, "mime_type": "text/markdown", "content_text": content}}).Expect(t, http.StatusCreated)
	}
	upload("numbers.md", "## Numbers\n\n| Region | Runs | Share |\n|:---|---:|:---:|\n| west | 12 | 60% |\n| east | 8 | **40%** |\n\n- [x] counted\n- [ ] checked\n")
	upload("hostile.md", hostileMarkdown)
	p.Report(t, run.ID, "complete", rt.RuntimeToken, map[string]any{
		"output": map[string]any{"text": "Done.\n\n" + hostileMarkdown},
	}).Expect(t, http.StatusOK)

	b := newBrowser(t)
	b.signIn(p)
	b.open(p.APIBase + "/tasks/" + run.ID)
	b.waitText("#task-status", "Completed")
	b.waitText("#task-result .artifact .markdown table thead th", "Region")
	b.waitJS("the hostile artifact rendered", `() => [...document.querySelectorAll('#task-result .artifact .markdown h2')].some((h) => h.textContent === 'Hostile')`)
	cells := js[[]string](b, `[...document.querySelectorAll('#task-result .markdown table tbody tr')].map((tr) => [...tr.cells].map((c) => c.textContent.trim()).join('|'))`)
	if strings.Join(cells, "\n") != "west|12|60%\neast|8|40%" {
		t.Fatalf("the table's rows are %q", cells)
	}
	if !js[bool](b, `document.querySelector('#task-result .markdown table tbody tr:nth-child(2) td:nth-child(3) strong')?.textContent === '40%'`) {
		t.Error("Markdown inside a table cell is not rendered")
	}
	b.waitJS("the task list's check boxes", `() => [...document.querySelectorAll('#task-result .markdown input[type=checkbox]')].map((c) => c.checked + ':' + c.disabled).join(' ') === 'true:true false:true'`)
	b.shot("a Markdown table and a hostile artifact")
	b.checkA11y("rendered Markdown")

	// Each hostile piece, in the artifact and in the answer, is gone or text.
	for _, check := range []struct{ what, expr string }{
		{"no script ran", `window.__ran === undefined`},
		{"no element that runs or loads", `!document.querySelector('.markdown :is(script, img, svg, iframe, form, style, object, embed, input:not([type=checkbox]))')`},
		{"no event handler or style attribute", `![...document.querySelectorAll('.markdown *')].some((el) => [...el.attributes].some((a) => /^on|^style$/i.test(a.name)))`},
		{"no link but to http(s)", `[...document.querySelectorAll('.markdown a')].every((a) => /^https?:$/.test(new URL(a.href).protocol))`},
		{"links open apart", `[...document.querySelectorAll('.markdown a')].every((a) => a.rel === 'noopener noreferrer' && a.target === '_blank')`},
		{"the real link kept", `[...document.querySelectorAll('.markdown a')].filter((a) => a.href === 'https://example.com/docs' && a.textContent === 'a real link').length === 2`},
		{"the image a link to it", `[...document.querySelectorAll('.markdown a')].filter((a) => a.href === 'https://example.com/pixel.png' && a.textContent === 'tracker').length === 2`},
		{"the javascript: links are text", `[...document.querySelectorAll('.markdown')].filter((m) => m.textContent.includes('markdown link') && m.textContent.includes('raw link')).length === 2`},
		{"headings under the page's own", `document.querySelectorAll('h1').length === 1 && [...document.querySelectorAll('.markdown h2')].some((h) => h.textContent === 'Hostile')`},
	} {
		if !js[bool](b, check.expr) {
			t.Errorf("%s: %s", check.what, check.expr)
		}
	}
	// Clicking where the links and handlers were runs nothing either.
	js[bool](b, `(() => { for (const el of document.querySelectorAll('.markdown p, .markdown li')) el.click(); return true; })()`)
	if !js[bool](b, `window.__ran === undefined`) {
		t.Errorf("a click ran %q", js[string](b, `String(window.__ran)`))
	}
}

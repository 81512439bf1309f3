package builtin

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func fetchConfig(allowPrivate bool) config.WebFetch {
	return config.WebFetch{Enabled: true, TimeoutMs: 5000, MaxBytes: 1 << 20, AllowPrivateNetworks: allowPrivate}
}

func testServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>Hello page</title><script>x()</script></head><body><nav>menu</nav><h1>Hi</h1><p>Some <a href="/x">linked</a> text.</p></body></html>`)
	})
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "plain\r\ntext <b>not html</b>\n")
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a":"<&>"}`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("0123456789", 1000))
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<meta charset=\"iso-8859-1\"><p>caf\xe9</p>"))
	})
	mux.HandleFunc("/png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	})
	mux.HandleFunc("/untyped", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		w.Write([]byte("just text"))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.HandleFunc("/redirect/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			http.Redirect(w, r, "/text", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/redirect/%d", n-1), http.StatusFound)
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func fetch(t *testing.T, tool *api.Tool, input map[string]any) (map[string]any, error) {
	t.Helper()
	res, err := callTool(t, tool, input)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(res.Details, &m); err != nil {
		t.Fatal(err)
	}
	return m, nil
}

func TestWebFetch(t *testing.T) {
	srv := testServer(t)
	tool := webFetchTool(fetchConfig(true), nil)
	tests := []struct {
		path  string
		input map[string]any
		want  map[string]any
	}{
		{"/page", nil, map[string]any{"status": 200.0, "title": "Hello page", "text": "# Hi\n\nSome linked text.", "contentType": "text/html; charset=utf-8", "truncated": false}},
		{"/text", nil, map[string]any{"text": "plain\ntext <b>not html</b>\n", "contentType": "text/plain"}},
		{"/json", nil, map[string]any{"text": `{"a":"<&>"}`}},
		{"/big", map[string]any{"maxBytes": 25}, map[string]any{"text": "0123456789012345678901234", "truncated": true, "bytes": 25.0}},
		{"/latin1", nil, map[string]any{"text": "café"}},
		{"/untyped", nil, map[string]any{"text": "just text", "contentType": "text/plain; charset=utf-8"}},
		{"/missing", nil, map[string]any{"status": 404.0, "text": "no such page\n"}},
		{"/redirect/3", nil, map[string]any{"status": 200.0, "finalUrl": srv.URL + "/text", "url": srv.URL + "/redirect/3"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			in := map[string]any{"url": srv.URL + tc.path}
			for k, v := range tc.input {
				in[k] = v
			}
			got, err := fetch(t, tool, in)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %#v, want %#v", k, got[k], v)
				}
			}
			if _, ok := got["title"]; ok && tc.path != "/page" {
				t.Errorf("title present: %v", got["title"])
			}
		})
	}
	errs := []struct{ path, want string }{
		{"/png", "returned image/png content, which is not text"},
		{"/redirect/6", "stopped after 5 redirects"},
		{"/to?u=" + url.QueryEscape("ftp://example.com/"), "redirect to a ftp URL refused"},
	}
	for _, tc := range errs {
		_, err := fetch(t, tool, map[string]any{"url": srv.URL + tc.path})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
}

func TestWebFetchRefusesPrivateNetworks(t *testing.T) {
	srv := testServer(t)
	u, _ := url.Parse(srv.URL)
	tool := webFetchTool(fetchConfig(false), nil)
	for _, target := range []string{
		srv.URL + "/text",
		"http://localhost:" + u.Port() + "/text", // a name that resolves to loopback
		"http://[::1]:" + u.Port() + "/text",
		"http://0.0.0.0:" + u.Port() + "/text",
	} {
		_, err := fetch(t, tool, map[string]any{"url": target})
		if err == nil || !strings.Contains(err.Error(), "is not allowed") || !strings.Contains(err.Error(), "allowPrivateNetworks") {
			t.Errorf("%s: %v", target, err)
		}
	}
}

// TestWebFetchRedirectToRefusedHost: the guard runs for every connection, so a public page
// (here: the one server the test guard allows) cannot redirect into a refused address.
func TestWebFetchRedirectToRefusedHost(t *testing.T) {
	internal := testServer(t)
	public := testServer(t)
	pu, _ := url.Parse(public.URL)
	allowed := netip.MustParseAddrPort(pu.Host)
	var dialed []string
	guard := func(ap netip.AddrPort) error {
		dialed = append(dialed, ap.String())
		if ap == allowed {
			return nil
		}
		return guardAddr(ap)
	}
	tool := webFetchTool(fetchConfig(false), guard)
	if _, err := fetch(t, tool, map[string]any{"url": public.URL + "/text"}); err != nil {
		t.Fatalf("allowed server: %v", err)
	}
	_, err := fetch(t, tool, map[string]any{"url": public.URL + "/to?u=" + url.QueryEscape(internal.URL+"/text")})
	if err == nil || !strings.Contains(err.Error(), "loopback address) is not allowed") {
		t.Fatalf("redirect to a loopback server: %v", err)
	}
	if len(dialed) < 2 {
		t.Errorf("the guard saw %v", dialed)
	}
}

func TestBlockedAddr(t *testing.T) {
	blocked := []string{
		"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254",
		"0.0.0.0", "0.1.2.3", "100.64.0.1", "224.0.0.1", "255.255.255.255", "240.0.0.1", "198.18.0.1",
		"::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "ff01::1", "::ffff:127.0.0.1",
		"::ffff:10.0.0.1", "::127.0.0.1", "64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:7f00:1::1",
		"2002:c0a8:101::", "2001::1", "fec0::1",
	}
	for _, s := range blocked {
		if blockedAddr(netip.MustParseAddr(s)) == "" {
			t.Errorf("%s is allowed", s)
		}
	}
	allowed := []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"}
	for _, s := range allowed {
		if r := blockedAddr(netip.MustParseAddr(s)); r != "" {
			t.Errorf("%s is blocked: %s", s, r)
		}
	}
}

func TestHTMLToTextGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/html/*.html")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			title, text, truncated := htmlToText(string(src), 1<<20)
			got := fmt.Sprintf("title: %s\ntruncated: %v\n---\n%s\n", title, truncated, text)
			golden := strings.TrimSuffix(f, ".html") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s (run go test -update after checking):\n%s", f, golden, got)
			}
		})
	}
}

func TestHTMLToTextBounds(t *testing.T) {
	src := "<p>" + strings.Repeat("word é ", 10000) + "</p>"
	_, text, truncated := htmlToText(src, 1001)
	if !truncated || len(text) > 1001 || !utf8.ValidString(text) {
		t.Errorf("len %d truncated %v", len(text), truncated)
	}
	// Pathological inputs stay linear and do not panic.
	for _, s := range []string{
		strings.Repeat("<", 100000), strings.Repeat("<a ", 50000), strings.Repeat("<!--", 50000),
		strings.Repeat("<script>", 30000), strings.Repeat("<nav>", 30000) + "x", "<a b='", "<a b=\"x", "</", "<title>",
		strings.Repeat("&amp;", 30000),
	} {
		htmlToText(s, 1<<20)
	}
}

func FuzzHTMLToText(f *testing.F) {
	for _, s := range []string{"<p>a</p>", "<title>t</title><nav>x</nav>y", "<pre> a\n b</pre>", "<a href='x'>l</a>", "<div hidden>h</div>v"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		title, text, _ := htmlToText(s, 4096)
		if len(text) > 4096 || len(title) > maxTitleBytes {
			t.Fatalf("unbounded: %d %d", len(text), len(title))
		}
		if utf8.ValidString(s) && (!utf8.ValidString(text) || !utf8.ValidString(title)) {
			t.Fatal("invalid UTF-8 out of valid input")
		}
		if bytes.ContainsAny([]byte(text), "\x00\x1b") {
			t.Fatal("control characters in text")
		}
	})
}

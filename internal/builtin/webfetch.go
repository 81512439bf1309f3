package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/codemode-go/codemode/api"
	"github.com/codemode-go/codemode/config"
	"github.com/codemode-go/codemode/internal/nativetool"
	"golang.org/x/text/encoding/htmlindex"
)

const (
	maxRedirects    = 5
	maxURLBytes     = 8 << 10
	maxFetchText    = 2 << 20 // text returned, after extraction and decoding
	defaultFetchMax = 2 << 20
	defaultFetchTTL = 15 * time.Second
)

const webFetchInput = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "http or https URL to GET."},
    "maxBytes": {"type": "integer", "minimum": 1, "description": "Most response body bytes to read (default and upper bound: the configured limit)."}
  },
  "required": ["url"],
  "additionalProperties": false
}`

const webFetchOutput = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The URL requested."},
    "finalUrl": {"type": "string", "description": "The URL after redirects."},
    "status": {"type": "integer", "description": "HTTP status code."},
    "contentType": {"type": "string"},
    "title": {"type": "string", "description": "The HTML document's title, when it has one."},
    "text": {"type": "string", "description": "Readable text of an HTML page, or the body of a text response."},
    "truncated": {"type": "boolean", "description": "True when the body or the text was cut at a limit."},
    "bytes": {"type": "integer", "minimum": 0, "description": "Body bytes read."}
  },
  "required": ["url", "finalUrl", "status", "contentType", "text", "truncated", "bytes"],
  "additionalProperties": false
}`

type webFetchArgs struct {
	URL      string `json:"url"`
	MaxBytes *int64 `json:"maxBytes"`
}

type webFetchDetails struct {
	URL         string `json:"url"`
	FinalURL    string `json:"finalUrl"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Title       string `json:"title,omitempty"`
	Text        string `json:"text"`
	Truncated   bool   `json:"truncated"`
	Bytes       int    `json:"bytes"`
}

type fetcher struct {
	client   *http.Client
	maxBytes int64
	timeout  time.Duration
}

func webFetchTool(cfg config.WebFetch, guard func(netip.AddrPort) error) *api.Tool {
	f := newFetcher(cfg, guard)
	t := nativetool.Rendered(coreSpec("web_fetch", "Fetch URL",
		"Fetch an http or https URL with GET and return its readable text: HTML is reduced to the page's text (scripts, styles and navigation removed), other text types are returned as is. Private and local network addresses are refused unless the configuration allows them.",
		webFetchInput, webFetchOutput, true),
		f.fetch, webFetchText)
	t.Untrusted = true // a web page is anybody's text (issue 22 item 6)
	return t
}

func webFetchText(d *webFetchDetails) string {
	var b strings.Builder
	if d.Title != "" {
		fmt.Fprintf(&b, "Title: %s\n", d.Title)
	}
	fmt.Fprintf(&b, "URL: %s\nStatus: %d\n\n%s", d.FinalURL, d.Status, d.Text)
	if d.Truncated {
		b.WriteString("\n[truncated]")
	}
	return b.String()
}

// newFetcher builds the HTTP client. guard, when not nil, replaces the address check (tests
// use it to allow one loopback server while refusing others).
func newFetcher(cfg config.WebFetch, guard func(netip.AddrPort) error) *fetcher {
	timeout := cfg.Timeout()
	if timeout <= 0 {
		timeout = defaultFetchTTL
	}
	maxBytes := cfg.MaxBytes
	if maxBytes <= 0 {
		maxBytes = defaultFetchMax
	}
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if guard == nil {
		guard = guardAddr
	}
	if !cfg.AllowPrivateNetworks {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("cannot check the address %q", address)
			}
			return guard(ap)
		}
	}
	transport := &http.Transport{
		Proxy:                  nil, // a proxy would hide the real destination from the guard
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	client := &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s URL refused (only http and https)", req.URL.Scheme)
			}
			return nil
		},
	}
	return &fetcher{client: client, maxBytes: maxBytes, timeout: timeout}
}

// blockedError is returned by the dial guard.
type blockedError struct {
	addr   netip.Addr
	reason string
}

func (e *blockedError) Error() string {
	return fmt.Sprintf("connecting to %s (%s) is not allowed", e.addr, e.reason)
}

// guardAddr checks an address about to be connected to. It runs in the net.Dialer's Control
// function, after DNS resolution, on the address actually dialled, for the first request, every
// redirect and every retry, so neither a redirect nor a DNS answer that changes between checks
// can reach a refused address.
func guardAddr(ap netip.AddrPort) error {
	if reason := blockedAddr(ap.Addr()); reason != "" {
		return &blockedError{addr: ap.Addr().Unmap(), reason: reason}
	}
	return nil
}

type prefixReason struct {
	prefix netip.Prefix
	reason string
}

var specialPrefixes = []prefixReason{
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved address"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible address"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64 address"},
	{netip.MustParsePrefix("100::/64"), "discard address"},
	{netip.MustParsePrefix("2001::/32"), "Teredo address"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation address"},
	{netip.MustParsePrefix("fec0::/10"), "site-local address"},
}

var (
	nat64Prefix = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// blockedAddr says why web_fetch may not connect to a, or "" when it may. IPv4 addresses
// embedded in IPv6 (mapped, NAT64, 6to4) are judged as IPv4.
func blockedAddr(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "invalid address"
	case a.IsLoopback():
		return "loopback address"
	case a.IsUnspecified():
		return "unspecified address"
	case a.IsPrivate():
		return "private address"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local address"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast address"
	}
	for _, p := range specialPrefixes {
		if p.prefix.Contains(a) {
			return p.reason
		}
	}
	if a.Is6() {
		b := a.As16()
		if nat64Prefix.Contains(a) {
			if r := blockedAddr(netip.AddrFrom4([4]byte(b[12:16]))); r != "" {
				return "NAT64 " + r
			}
		}
		if sixToFour.Contains(a) {
			if r := blockedAddr(netip.AddrFrom4([4]byte(b[2:6]))); r != "" {
				return "6to4 " + r
			}
		}
	}
	return ""
}

func (f *fetcher) fetch(ctx context.Context, in *webFetchArgs) (*webFetchDetails, error) {
	if in.URL == "" {
		return nil, errors.New("web_fetch: url is required")
	}
	if len(in.URL) > maxURLBytes {
		return nil, fmt.Errorf("web_fetch: url is %d bytes (limit %d)", len(in.URL), maxURLBytes)
	}
	u, err := url.Parse(in.URL)
	if err != nil {
		return nil, fmt.Errorf("web_fetch: invalid url: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("web_fetch: only http and https URLs are supported, not %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("web_fetch: the url has no host")
	}
	limit := f.maxBytes
	if in.MaxBytes != nil {
		if *in.MaxBytes < 1 {
			return nil, fmt.Errorf("web_fetch: maxBytes must be at least 1, not %d", *in.MaxBytes)
		}
		limit = min(limit, *in.MaxBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("web_fetch: %v", err)
	}
	req.Header.Set("User-Agent", "codemode-web_fetch/1.0")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fetchError(in.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fetchError(in.URL, err)
	}
	d := &webFetchDetails{URL: in.URL, FinalURL: resp.Request.URL.String(), Status: resp.StatusCode}
	if int64(len(body)) > limit {
		body, d.Truncated = body[:limit], true
	}
	d.Bytes = len(body)

	ct := resp.Header.Get("Content-Type")
	mt, params, err := mime.ParseMediaType(ct)
	if ct == "" || err != nil {
		ct = http.DetectContentType(body)
		mt, params, _ = mime.ParseMediaType(ct)
	}
	d.ContentType = ct
	isHTML := mt == "text/html" || mt == "application/xhtml+xml"
	if !isHTML && !isTextType(mt) {
		// The server may mislabel text; trust the bytes when they look like text.
		sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(body))
		switch {
		case len(body) == 0:
		case sniffed == "text/html":
			isHTML = true
		case strings.HasPrefix(sniffed, "text/"):
		default:
			return nil, fmt.Errorf("web_fetch: %s returned %s content, which is not text", in.URL, mt)
		}
	}
	text := decodeCharset(body, params["charset"], isHTML)
	if isHTML {
		title, t, cut := htmlToText(text, maxFetchText)
		d.Title, d.Text, d.Truncated = title, t, d.Truncated || cut
	} else {
		text = cleanText(strings.ReplaceAll(text, "\r\n", "\n"))
		if len(text) > maxFetchText {
			text, d.Truncated = string(trimPartialRune([]byte(text[:maxFetchText]))), true
		}
		d.Text = text
	}
	return d, nil
}

// isTextType reports whether a media type is text worth returning as is.
func isTextType(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/x-ndjson", "application/yaml", "application/x-yaml",
		"application/toml", "application/x-sh", "application/graphql", "application/sql",
		"application/csv", "application/x-www-form-urlencoded":
		return true
	}
	return false
}

var metaCharset = regexp.MustCompile(`(?i)<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_:.\-]+)`)

// decodeCharset converts body to UTF-8: from the Content-Type charset, a byte order mark, or
// for HTML a <meta> charset in the first 1024 bytes. Unknown charsets are read as UTF-8;
// invalid UTF-8 becomes U+FFFD.
func decodeCharset(body []byte, charset string, isHTML bool) string {
	switch {
	case bytes.HasPrefix(body, []byte("\xef\xbb\xbf")):
		body, charset = body[3:], "utf-8"
	case bytes.HasPrefix(body, []byte("\xff\xfe")):
		charset = "utf-16le"
	case bytes.HasPrefix(body, []byte("\xfe\xff")):
		charset = "utf-16be"
	case charset == "" && isHTML:
		if m := metaCharset.FindSubmatch(body[:min(len(body), 1024)]); m != nil {
			charset = string(m[1])
		}
	}
	if charset != "" {
		if enc, err := htmlindex.Get(charset); err == nil {
			if name, _ := htmlindex.Name(enc); name != "utf-8" {
				if out, err := enc.NewDecoder().Bytes(body); err == nil {
					body = out
				}
			}
		}
	}
	if utf8.Valid(body) {
		return string(body)
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// fetchError explains a failed request, naming a refused address plainly.
func fetchError(rawURL string, err error) error {
	var be *blockedError
	if errors.As(err, &be) {
		return fmt.Errorf("web_fetch: %s: %v; web_fetch does not reach private or local networks (tools.webFetch.allowPrivateNetworks)", rawURL, be)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("web_fetch: %s: timed out", rawURL)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("web_fetch: %s: %v", rawURL, err)
}

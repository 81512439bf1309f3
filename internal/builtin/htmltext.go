package builtin

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// htmltext.go turns an HTML document into readable text with a small tokenizer (the module
// has no HTML parser dependency). It keeps the text of the document body, link text included,
// drops scripts, styles, navigation, forms' option lists, embedded media and hidden elements,
// collapses whitespace outside <pre>, and marks structure lightly: blank lines between
// blocks, "# " before headings and "- " before list items. Malformed markup degrades to
// extra or missing text, never to an error, and the work is linear in the input.

const maxTitleBytes = 1000

// Elements whose content is not markup (raw text); title and textarea decode entities.
var rawTextElements = map[string]bool{
	"script": true, "style": true, "textarea": true, "title": true, "xmp": true,
	"iframe": true, "noembed": true, "noframes": true, "noscript": true, "plaintext": true,
}

// Elements whose whole subtree is dropped.
var skippedElements = map[string]bool{
	"head": true, "nav": true, "svg": true, "math": true, "template": true, "select": true,
	"datalist": true, "canvas": true, "audio": true, "video": true, "object": true,
}

// Elements that may appear in <head>; any other start tag ends an unclosed head.
var headElements = map[string]bool{
	"title": true, "meta": true, "link": true, "style": true, "script": true, "base": true,
	"noscript": true, "template": true,
}

// Elements without content.
var voidElements = map[string]bool{
	"area": true, "base": true, "br": true, "col": true, "embed": true, "hr": true, "img": true,
	"input": true, "link": true, "meta": true, "source": true, "track": true, "wbr": true,
	"param": true, "keygen": true,
}

// Elements whose end tag is often left out; a hidden attribute on them is not honoured, since
// their subtree's end cannot be found reliably.
var optionalEndElements = map[string]bool{
	"p": true, "li": true, "dt": true, "dd": true, "option": true, "tr": true, "td": true,
	"th": true, "thead": true, "tbody": true, "tfoot": true, "colgroup": true, "rt": true, "rp": true,
}

// Block elements: separated from their surroundings by a blank line.
var blockElements = map[string]bool{
	"p": true, "div": true, "section": true, "article": true, "main": true, "header": true,
	"footer": true, "aside": true, "blockquote": true, "pre": true, "figure": true,
	"figcaption": true, "form": true, "fieldset": true, "address": true, "details": true,
	"summary": true, "table": true, "ul": true, "ol": true, "dl": true, "center": true,
	"h1": true, "h2": true, "h3": true, "h4": true, "h5": true, "h6": true, "hr": true,
	"body": true, "hgroup": true, "menu": true, "caption": true, "legend": true,
}

// Line elements: start on a new line.
var lineElements = map[string]bool{
	"br": true, "li": true, "dt": true, "dd": true, "tr": true, "option": true,
}

// htmlToText extracts the first <title> and the readable text of an HTML document. The text is
// cut at maxText bytes (truncated is then true).
func htmlToText(src string, maxText int) (title, text string, truncated bool) {
	x := &extractor{out: textOut{max: maxText}}
	x.run(src)
	return x.title, strings.TrimRight(x.out.b.String(), " \n"), x.out.full
}

type extractor struct {
	out       textOut
	title     string
	haveTitle bool
	skipName  string // element whose subtree is being dropped ("" when none)
	skipDepth int    // open elements named skipName inside the dropped subtree
	pre       int    // open <pre> elements
	preStart  bool   // a <pre> just opened: a newline right after it is not content
}

type tagInfo struct {
	name      string
	hidden    bool // hidden attribute or aria-hidden="true"
	selfClose bool
}

func (x *extractor) run(src string) {
	i := 0
	for i < len(src) && !x.out.full {
		lt := strings.IndexByte(src[i:], '<')
		if lt < 0 {
			x.text(src[i:])
			return
		}
		if lt > 0 {
			x.text(src[i : i+lt])
			i += lt
		}
		rest := src[i:]
		switch {
		case strings.HasPrefix(rest, "<!--"):
			end := strings.Index(rest[4:], "-->")
			if end < 0 {
				return
			}
			i += 4 + end + 3
		case len(rest) > 1 && (rest[1] == '!' || rest[1] == '?'):
			i += skipPast(rest, '>')
		case len(rest) > 2 && rest[1] == '/' && isASCIIAlpha(rest[2]):
			j := 2
			for j < len(rest) && !isHTMLSpace(rest[j]) && rest[j] != '/' && rest[j] != '>' {
				j++
			}
			name := strings.ToLower(rest[2:j])
			i += skipPast(rest, '>')
			x.end(name)
		case len(rest) > 1 && rest[1] == '/':
			i += skipPast(rest, '>')
		case len(rest) > 1 && isASCIIAlpha(rest[1]):
			tag, n := parseStartTag(rest)
			i += n
			x.start(tag)
			if rawTextElements[tag.name] && !tag.selfClose {
				content, n := rawText(src[i:], tag.name)
				i += n
				x.raw(tag.name, content)
			}
		default:
			x.text("<")
			i++
		}
	}
}

// skipPast returns the length of s up to and including the first c (all of s if none).
func skipPast(s string, c byte) int {
	if j := strings.IndexByte(s, c); j >= 0 {
		return j + 1
	}
	return len(s)
}

func isASCIIAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

// parseStartTag reads "<name attr=value ...>" from the start of s and returns the tag and the
// bytes it takes.
func parseStartTag(s string) (tagInfo, int) {
	j := 1
	for j < len(s) && !isHTMLSpace(s[j]) && s[j] != '/' && s[j] != '>' {
		j++
	}
	t := tagInfo{name: strings.ToLower(s[1:j])}
	for j < len(s) {
		for j < len(s) && (isHTMLSpace(s[j]) || s[j] == '/') {
			if s[j] == '/' && j+1 < len(s) && s[j+1] == '>' {
				t.selfClose = true
			}
			j++
		}
		if j >= len(s) {
			break
		}
		if s[j] == '>' {
			return t, j + 1
		}
		k := j
		for j < len(s) && !isHTMLSpace(s[j]) && s[j] != '/' && s[j] != '>' && (s[j] != '=' || j == k) {
			j++
		}
		name := strings.ToLower(s[k:j])
		for j < len(s) && isHTMLSpace(s[j]) {
			j++
		}
		value := ""
		if j < len(s) && s[j] == '=' {
			j++
			for j < len(s) && isHTMLSpace(s[j]) {
				j++
			}
			if j < len(s) && (s[j] == '"' || s[j] == '\'') {
				q := s[j]
				end := strings.IndexByte(s[j+1:], q)
				if end < 0 {
					return t, len(s)
				}
				value = s[j+1 : j+1+end]
				j += end + 2
			} else {
				v := j
				for j < len(s) && !isHTMLSpace(s[j]) && s[j] != '>' {
					j++
				}
				value = s[v:j]
			}
		}
		switch name {
		case "hidden":
			t.hidden = true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(html.UnescapeString(value)), "true") {
				t.hidden = true
			}
		}
	}
	return t, len(s)
}

// rawText returns the content of a raw text element up to its end tag and the bytes consumed,
// end tag included.
func rawText(s, name string) (string, int) {
	if name == "plaintext" {
		return s, len(s)
	}
	for i := 0; ; {
		j := strings.Index(s[i:], "</")
		if j < 0 {
			return s, len(s)
		}
		j += i
		k := j + 2 + len(name)
		if k <= len(s) && strings.EqualFold(s[j+2:k], name) && (k == len(s) || isHTMLSpace(s[k]) || s[k] == '/' || s[k] == '>') {
			return s[:j], k + skipPast(s[k:], '>')
		}
		i = j + 2
	}
}

func (x *extractor) start(t tagInfo) {
	x.preStart = false
	if x.skipName != "" {
		if x.skipName == "head" && !headElements[t.name] {
			x.skipName, x.skipDepth = "", 0 // an unclosed head ends at the first body element
		} else {
			if t.name == x.skipName && !t.selfClose && !voidElements[t.name] {
				x.skipDepth++
			}
			return
		}
	}
	if rawTextElements[t.name] {
		return
	}
	if voidElements[t.name] || t.selfClose {
		switch t.name {
		case "br":
			x.out.breakLine(1)
		case "hr":
			x.out.breakLine(2)
		case "img", "input", "wbr":
		default:
			if blockElements[t.name] {
				x.out.breakLine(2)
			}
		}
		return
	}
	if skippedElements[t.name] || (t.hidden && !optionalEndElements[t.name]) {
		x.skipName, x.skipDepth = t.name, 1
		return
	}
	switch {
	case len(t.name) == 2 && t.name[0] == 'h' && t.name[1] >= '1' && t.name[1] <= '6':
		x.out.breakLine(2)
		x.out.prefix = strings.Repeat("#", int(t.name[1]-'0')) + " "
	case t.name == "li":
		x.out.breakLine(1)
		x.out.prefix = "- "
	case t.name == "td" || t.name == "th":
		x.out.cell()
	case blockElements[t.name]:
		x.out.breakLine(2)
	case lineElements[t.name]:
		x.out.breakLine(1)
	}
	if t.name == "pre" {
		x.pre++
		x.preStart = true
	}
}

func (x *extractor) end(name string) {
	if x.skipName != "" {
		if name == x.skipName {
			x.skipDepth--
			if x.skipDepth <= 0 {
				x.skipName, x.skipDepth = "", 0
			}
		}
		return
	}
	if name == "pre" && x.pre > 0 {
		x.pre--
	}
	switch {
	case blockElements[name]:
		x.out.breakLine(2)
	case lineElements[name]:
		x.out.breakLine(1)
	}
}

// raw handles the content of a raw text element.
func (x *extractor) raw(name, content string) {
	switch name {
	case "title":
		if !x.haveTitle {
			x.haveTitle = true
			t := strings.Join(strings.Fields(cleanText(html.UnescapeString(content))), " ")
			if len(t) > maxTitleBytes {
				t = string(trimPartialRune([]byte(t[:maxTitleBytes])))
			}
			x.title = t
		}
	case "xmp", "plaintext":
		if x.skipName == "" {
			x.out.preText(content)
		}
	}
}

func (x *extractor) text(s string) {
	if x.skipName != "" {
		return
	}
	s = html.UnescapeString(s)
	if x.pre > 0 {
		if x.preStart {
			s = strings.TrimPrefix(strings.TrimPrefix(s, "\r"), "\n")
			x.preStart = false
		}
		x.out.preText(s)
		return
	}
	x.out.text(s)
}

// cleanText drops control characters other than tab and newline.
func cleanText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// textOut accumulates extracted text with collapsed whitespace.
type textOut struct {
	b      strings.Builder
	max    int
	full   bool
	space  bool   // a space is pending
	brk    int    // line breaks pending (1 or 2)
	prefix string // heading or list marker pending
	trail  int    // newlines at the end of b
}

func (t *textOut) breakLine(n int) {
	t.brk = max(t.brk, n)
	t.space = false
}

func (t *textOut) cell() {
	if t.b.Len() > 0 && t.brk == 0 {
		t.prefix = "| "
		t.space = true
	}
}

// flush writes what is pending before visible text.
func (t *textOut) flush() {
	if t.b.Len() > 0 {
		switch {
		case t.brk > t.trail:
			t.write(strings.Repeat("\n", t.brk-t.trail))
		case t.space:
			t.write(" ")
		}
	}
	t.brk, t.space = 0, false
	if t.prefix != "" {
		t.write(t.prefix)
		t.prefix = ""
	}
}

func (t *textOut) write(s string) {
	if t.full {
		return
	}
	if t.b.Len()+len(s) > t.max {
		room := t.max - t.b.Len()
		t.b.Write(trimPartialRune([]byte(s[:room])))
		t.full = true
		t.trail = 0
		return
	}
	t.b.WriteString(s)
	if n := len(s) - len(strings.TrimRight(s, "\n")); n == len(s) {
		t.trail += n
	} else {
		t.trail = n
	}
}

func (t *textOut) text(s string) {
	start := -1 // start of the current run of visible characters
	for i, r := range s {
		visible := !unicode.IsSpace(r) && r != utf8.RuneError && !(r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0))
		if visible {
			if start < 0 {
				t.flush()
				start = i
			}
			continue
		}
		if start >= 0 {
			t.write(s[start:i])
			start = -1
		}
		if unicode.IsSpace(r) {
			t.space = true
		}
	}
	if start >= 0 {
		t.write(s[start:])
	}
}

// preText writes preformatted text, keeping its whitespace.
func (t *textOut) preText(s string) {
	s = cleanText(strings.ReplaceAll(s, "\r\n", "\n"))
	if s == "" {
		return
	}
	t.flush()
	t.write(s)
}

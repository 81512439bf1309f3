package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is the analyzer: text → terms. The same pipeline runs over tool
// fields at index time and over the query at search time, so the rules only
// have to be consistent, not linguistically perfect:
//
//	raw text ─ splitWords ─▶ lowercase words ("getHTTPResponse" → get, http, response)
//	         ─ phrases    ─▶ a few two-word phrases folded to one word ("log out" → logout)
//	         ─ abbrev     ─▶ abbreviations expanded ("pr" → pull request, "repo" → repository)
//	         ─ stopwords  ─▶ dropped
//	         ─ stem       ─▶ light suffix stripping ("creating", "created", "creates" → creat)

// maxDescriptionBytes bounds how much of a description is indexed. Descriptions
// are untrusted and can be huge (MCP servers send whole manuals); the opening
// is where a tool says what it does, and a bound keeps indexing cost and the
// influence of one description on global statistics in check.
const maxDescriptionBytes = 2048

// maxFieldBytes bounds the other text fields (name, title, group), and
// maxQueryBytes the query: both are untrusted too.
const (
	maxFieldBytes = 512
	maxQueryBytes = 2048 // long task descriptions are queries too (issue 23 item 5)
)

// splitWords splits s into lowercase words. Anything that is not a letter or a
// digit separates words (spaces, punctuation, '_', '-', '.', '/', ':' …). Inside
// a run of letters and digits, identifiers are split at case changes: camelCase
// and PascalCase at a lower→upper change, acronyms before their last capital
// when a lowercase letter follows ("getHTTPResponse" → get, http, response;
// "APIKey" → api, key). Digits stay attached to their word when the word is
// short ("r2", "d1", "k8s", "3g", "ec2": these are names), and are split off
// longer words ("base64" → base, 64; "oauth2" → oauth, 2).
func splitWords(s string, out []string) []string {
	s = normalizeText(s)
	start, class := -1, classSpaced
	for i, r := range s {
		if isAlnum(r) {
			c := classSpaced
			if r >= 0x0E00 && !knobs.noUnicode {
				c = scriptClass(r)
			}
			if start < 0 {
				start, class = i, c
				continue
			}
			if c == class {
				continue
			}
			// A change of script class ends a word: "adcode查询" → adcode, 查询.
			out = appendChunk(s[start:i], class, out)
			start, class = i, c
			continue
		}
		if start >= 0 {
			out = appendChunk(s[start:i], class, out)
			start = -1
		}
	}
	if start >= 0 {
		out = appendChunk(s[start:], class, out)
	}
	return out
}

// appendChunk appends one run of letters and digits of one script class: spaced scripts are
// split at case changes, a run of a script without case (CJK, Thai…) is one word as it is.
func appendChunk(chunk string, class int, out []string) []string {
	if class != classSpaced {
		return append(out, chunk)
	}
	return splitCamel(chunk, out)
}

func isAlnum(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// splitCamel splits one run of letters and digits at case changes.
func splitCamel(chunk string, out []string) []string {
	if knobs.noCamel {
		return append(out, strings.ToLower(chunk))
	}
	if plainLower(chunk) {
		// The common case: lowercase ASCII letters, maybe digits after a short word.
		return splitDigits(chunk, out)
	}
	// ASCII chunks (the common case) are indexed by byte, others decoded.
	var rs []rune
	ascii := true
	for i := 0; i < len(chunk); i++ {
		if chunk[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !ascii {
		rs = []rune(chunk)
	}
	at := func(i int) rune {
		if ascii {
			return rune(chunk[i])
		}
		return rs[i]
	}
	piece := func(from, to int) string {
		if ascii {
			return chunk[from:to]
		}
		return string(rs[from:to])
	}
	n := len(chunk)
	if !ascii {
		n = len(rs)
	}
	start := 0
	for i := 1; i < n; i++ {
		prev, cur := at(i-1), at(i)
		split := false
		switch {
		case unicode.IsUpper(cur) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			split = true
		case unicode.IsUpper(cur) && unicode.IsUpper(prev) && i+1 < n && unicode.IsLower(at(i+1)):
			split = true
		}
		if split {
			out = splitDigits(piece(start, i), out)
			start = i
		}
	}
	return splitDigits(piece(start, n), out)
}

// plainLower reports whether chunk is lowercase ASCII letters and digits (no case change to
// split at).
func plainLower(chunk string) bool {
	for i := 0; i < len(chunk); i++ {
		if c := chunk[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// splitDigits lowercases one camel piece and splits letter/digit boundaries in
// pieces longer than 4 runes.
func splitDigits(p string, out []string) []string {
	if utf8.RuneCountInString(p) <= 4 {
		return append(out, strings.ToLower(p))
	}
	if isASCIIAlpha(p) {
		return append(out, p) // lowercase letters only: nothing to split or lower
	}
	start, prevDigit := 0, false
	for i, r := range p {
		d := unicode.IsDigit(r)
		if i > 0 && d != prevDigit {
			out = append(out, strings.ToLower(p[start:i]))
			start = i
		}
		prevDigit = d
	}
	return append(out, strings.ToLower(p[start:]))
}

// phrases folds a few two-word phrases into the single word tool names use, so
// that "log out" meets linear_logoutSession and "sign in" meets "login".
var phrases = map[[2]string]string{
	{"log", "out"}:     "logout",
	{"sign", "out"}:    "logout",
	{"log", "in"}:      "login",
	{"logged", "in"}:   "login",
	{"logged", "out"}:  "logout",
	{"who", "am"}:      "whoami",
	{"start", "with"}:  "prefix",
	{"starts", "with"}: "prefix",
	{"begin", "with"}:  "prefix",
	{"begins", "with"}: "prefix",
	{"money", "back"}:  "refund",
	{"sign", "in"}:     "login",
	{"look", "up"}:     "lookup",
	{"set", "up"}:      "setup",
	{"roll", "back"}:   "rollback",
	{"clean", "up"}:    "cleanup",
	{"dark", "mode"}:   "darkmode",
	{"light", "mode"}:  "lightmode",
	{"key", "value"}:   "keyvalue",
	{"web", "site"}:    "website",
	{"web", "page"}:    "webpage",
}

// abbrev expands abbreviations to the words tools and their descriptions use.
// It runs on both sides, so a description saying "repo" and a query saying
// "repository" meet on the same terms. Values may be several words.
var abbrev = map[string][]string{
	"pr":      {"pull", "request"},
	"prs":     {"pull", "request"},
	"mr":      {"merge", "request"},
	"mrs":     {"merge", "request"},
	"repo":    {"repository"},
	"repos":   {"repository"},
	"k8s":     {"kubernetes"},
	"kube":    {"kubernetes"},
	"db":      {"database"},
	"dbs":     {"database"},
	"dir":     {"directory"},
	"dirs":    {"directory"},
	"env":     {"environment"},
	"envs":    {"environment"},
	"msg":     {"message"},
	"msgs":    {"message"},
	"vm":      {"virtual", "machine"},
	"vms":     {"virtual", "machine"},
	"js":      {"javascript"},
	"ts":      {"typescript"},
	"md":      {"markdown"},
	"img":     {"image"},
	"auth":    {"authentication"},
	"info":    {"information"},
	"org":     {"organization"},
	"orgs":    {"organization"},
	"a11y":    {"accessibility"},
	"regex":   {"regular", "expression"},
	"addr":    {"address"},
	"args":    {"arguments"},
	"arg":     {"argument"},
	"params":  {"parameters"},
	"param":   {"parameter"},
	"cfg":     {"configuration"},
	"config":  {"configuration"},
	"configs": {"configuration"},
	"stats":   {"statistics"},
	"desc":    {"description"},
	"pkg":     {"package"},
	"pw":      {"password"},
}

// stopwords carry no tool-distinguishing meaning in a task-like query.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the of to in on onto into for by with from and or nor
		is are was were be been being am this that these those it its my me mine i you your yours
		we our ours us they their them he she his her at as so do does did done doing how what which who
		whom whose when where why there here can could would should will shall may might must please
		some any each every all also just only than then too very via using use used want wants need
		needs like about up if but not no yes one own such s t d ll re ve m let lets etc e g eg ie
		currently current given specific specified provided based way thing things something`) {
		stopwords[w] = true
	}
	for w := range stopwords {
		wordFlags[w] |= flagStop
	}
	for w := range abbrev {
		wordFlags[w] |= flagAbbrev
	}
	for p := range phrases {
		wordFlags[p[0]] |= flagPhrase
	}
}

// stem is a light suffix stripper, deliberately weaker than Porter: it only
// conflates inflections a tool search meets all the time (plurals, -ing, -ed,
// -ation, -ment and a final e), and never shortens a word below three letters
// or to a stem without a vowel. Examples: files→file, entries→entry,
// creating/created/creates/create→creat, notified→notify, running→run,
// deployment→deploy, migration/migrate→migrat, status→status,
// analysis→analysis. Non-ASCII words are left alone.
func stem(w string) string {
	n := len(w)
	if n <= 3 || !isASCIIAlpha(w) || knobs.noStem {
		return w
	}
	// Plurals.
	switch {
	case strings.HasSuffix(w, "ies") && n > 4:
		w = w[:n-3] + "y"
	case strings.HasSuffix(w, "ied") && n > 4:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:n-2]
	case strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "zzes"):
		w = w[:n-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:n-1]
	}
	n = len(w)
	// Verb and noun endings; at most one applies.
	switch {
	case strings.HasSuffix(w, "ing") && okStem(w[:n-3]):
		w = undouble(w[:n-3])
	case strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed") && okStem(w[:n-2]):
		w = undouble(w[:n-2])
	case strings.HasSuffix(w, "ation") && n-5 >= 4:
		w = w[:n-5] + "at"
	case strings.HasSuffix(w, "ment") && n-4 >= 4 && hasVowel(w[:n-4]):
		w = w[:n-4]
	}
	n = len(w)
	if n > 4 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func okStem(s string) bool { return len(s) >= 3 && hasVowel(s) }

func hasVowel(s string) bool { return strings.ContainsAny(s, "aeiouy") }

// undouble turns a doubled final consonant into one ("runn" → "run",
// "logg" → "log"), except l, s and z ("bill", "miss").
func undouble(s string) string {
	n := len(s)
	if n >= 3 && s[n-1] == s[n-2] && !strings.ContainsRune("aeiouylsz", rune(s[n-1])) {
		return s[:n-1]
	}
	return s
}

func isASCIIAlpha(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// analyze turns text into terms (see the top of this file). scratch is reused
// for the intermediate word list.
func analyze(text string, scratch []string, out []string, c *cjkCtx) ([]string, []string) {
	words := splitWords(text, scratch[:0])
	return words, analyzeWordsCJK(words, out, c)
}

func first(w string) rune {
	r, _ := utf8.DecodeRuneInString(w)
	return r
}

// analyzeWords is analyze after splitWords.
func analyzeWords(words []string, out []string) []string { return analyzeWordsCJK(words, out, nil) }

// analyzeWordsCJK is analyzeWords with a dictionary for Chinese and Japanese (cjk.go).
func analyzeWordsCJK(words []string, out []string, c *cjkCtx) []string {
	for i := 0; i < len(words); i++ {
		w := words[i]
		fl := wordFlags[w] // one look-up for the three tables
		if knobs.noAbbrev {
			out = appendTermFlags(out, w, fl, c)
			continue
		}
		if i+1 < len(words) && fl&flagPhrase != 0 {
			if p, ok := phrases[[2]string{w, words[i+1]}]; ok {
				i++
				if p != "" {
					out = appendTerm(out, p, c)
				}
				continue
			}
		}
		if fl&flagAbbrev != 0 {
			for _, e := range abbrev[w] {
				out = appendTerm(out, e, c)
			}
			continue
		}
		out = appendTermFlags(out, w, fl, c)
	}
	return out
}

// wordFlags says, per word, whether it is a stopword, an abbreviation or the first word of a
// phrase (built from those tables at init).
var wordFlags = map[string]uint8{}

const (
	flagStop = 1 << iota
	flagAbbrev
	flagPhrase
)

func appendTerm(out []string, w string, c *cjkCtx) []string {
	return appendTermFlags(out, w, wordFlags[w], c)
}

// appendTermFlags is appendTerm with w's wordFlags.
func appendTermFlags(out []string, w string, fl uint8, c *cjkCtx) []string {
	if !isASCII(w) {
		if spaceless(w) {
			switch scriptClass(first(w)) {
			case classCJK:
				return appendCJK(out, w, c)
			case classHangul:
				if c != nil && c.loan != nil {
					c.loan(w)
				}
			}
			return appendBigrams(out, w)
		}
		if f, folded := foldWord(w); folded {
			// Not an English word: no stemming.
			if stopwords[f] || utf8.RuneCountInString(f) == 1 {
				return out
			}
			return append(out, f)
		}
	}
	if fl&flagStop != 0 {
		return out
	}
	if utf8.RuneCountInString(w) == 1 {
		if r, _ := utf8.DecodeRuneInString(w); !unicode.IsDigit(r) {
			return out
		}
	}
	return append(out, stem(w))
}

// Terms returns the index terms of text, as the ranking sees them. It is
// exported for tests, debugging and explanations ("why did this rank?").
func Terms(text string) []string {
	_, out := analyze(text, nil, nil, &cjkCtx{d: dictionary()})
	return out
}

// normKey is the exact-name key: lowercase letters and digits only, so
// "create_issue", "createIssue", "Create Issue" and "create-issue" agree.
func normKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

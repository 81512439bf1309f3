package search

import (
	"math"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/codemode-go/codemode/internal/search/cedict"
	"github.com/codemode-go/codemode/internal/search/wordnet"
	"github.com/codemode-go/codemode/internal/textcut"
)

// Doc is one searchable tool.
type Doc struct {
	// ID is unique and returned in results ("native:core:read", "mcp:github:create_issue").
	// It also takes part in the exact-name short-circuit.
	ID string
	// Name is the tool name, an identifier in any convention (create_issue,
	// browser_take_screenshot, API-get-user, linear_createIssue); it is split
	// into words and is the heaviest field.
	Name string
	// Title is the human label (optional).
	Title string
	// Description is untrusted prose and may be huge: only its first 2 KB are
	// indexed, so a long description cannot buy rank with volume.
	Description string
	// Params are the parameter names. Trusted for native tools; for MCP tools
	// they only feed the ranking (they are never shown to the model from here).
	Params []string
	// ParamDocs are the parameters' descriptions (optional, untrusted): indexed with a low
	// weight, bounded like the description.
	ParamDocs []string
	// Group is the server or plugin id (optional): indexed with a low weight so
	// "slack" or "stripe" in a query helps, and usable as a filter.
	Group string
}

// Hit is one search result.
type Hit struct {
	ID    string
	Doc   int // position in the docs given to NewIndex
	Score float64
	// Matched are the query words the tool matched, best first; a word matched
	// through a synonym or WordNet reads "word≈term" (term as indexed).
	Matched []string
	// ServerMatch is set when the tool's server (Options.Servers) matched the
	// query and lifted the tool.
	ServerMatch bool
}

// Fields, in the order of the weights below.
const (
	fName = iota
	fTitle
	fParams
	fDesc
	fGroup
	fLead
	fTrans // English translations of the Chinese/Japanese words of the other fields (cjk.go)
	fParamDocs
	numFields
)

// Ranking parameters: BM25F (one saturation over the weighted, per-field
// length-normalised term frequency). Chosen on the dev split of the evaluation
// set (package searcheval); testdata/README.md has the figures. The ranking is
// not very sensitive to them (±0.01 recall@5 over wide ranges); the field
// weights as a whole are worth about +0.03 recall@5 over equal weights.
var (
	fieldWeight = [numFields]float64{fName: 3.0, fTitle: 2.0, fParams: 0.7, fDesc: 0.7, fGroup: 0.7, fLead: 0.5, fTrans: 1, fParamDocs: 0.2}
	fieldB      = [numFields]float64{fName: 0.5, fTitle: 0.5, fParams: 0.3, fDesc: 0.75, fGroup: 0, fLead: 0.5, fTrans: 0.5, fParamDocs: 0.75}
)

const k1 = 1.2

// knobs switch parts of the ranking off for the ablation test
// (ablation_test.go); production code never changes them.
var knobs struct {
	noSynonyms, noStem, noCamel, noAbbrev, noCompound, noExact bool
	noUnicode                                                  bool // issue 23: no NFKC, folding or bigrams
	noWordNet                                                  bool // issue 23: no WordNet expansion
	noServers                                                  bool // issue 23: no server evidence
	noCedict, noSegWords, noTranslate                          bool // issue 23 round 2: no dictionary at all, no dictionary words, no translation
	noCognates                                                 bool // issue 23 round 2: no prefix cognates for unknown words
	noLoanwords                                                bool // issue 23 round 2: no katakana/hangul loanword matching
	noKanaSplit                                                bool // issue 23 round 2: Japanese runs analysed as Chinese ones
	noParamDocs                                                bool // issue 23 round 2: parameter descriptions not indexed
	plainFields                                                bool // BM25 over name + description only, equal weights
}

// A tool's translated terms (fTrans) are bounded: the first maxDocTranslations English words of
// each dictionary word (its commonest senses come first), maxTransTerms in all.
const (
	maxDocTranslations = 3
	maxTransTerms      = 384
)

// maxTF clips a term's count within one field: repeating a word in a
// description (or a name) does not make a tool more relevant.
const maxTF = 4

type posting struct {
	doc int32
	tf  float32 // BM25F pseudo term frequency (weighted, length-normalised)
}

type term struct {
	idf      float64
	postings []posting // by doc
	// While NewIndex counts: the last document that used the term, its slot there, and the
	// number of documents that use it.
	lastDoc, slot, df int32
}

// Index is an immutable ranking index over a catalog version. Build it once per
// catalog (NewIndex), then Search it from any number of goroutines.
type Index struct {
	docs  []Doc
	terms map[string]*term
	exact map[string][]int32 // normKey(name | id | group+name) → docs, in doc order
	vocab map[string]uint8   // raw words of the corpus (vocabWord, vocabProse), for splitting compounds
	// Server evidence (Options.Servers): an index of one document per server, and each doc's
	// server there (-1: none).
	servers *Index
	group   []int32
	// dict is the Chinese–English dictionary the index was built with (nil: none); queries are
	// analysed with the same one.
	dict *cedict.Dict
	// sorted are the index's plain-letter terms in order, for cognate look-ups (built on first
	// use).
	sortedOnce sync.Once
	sorted     []string
	// loans maps consonant skeletons of catalog words to their terms (translit.go).
	loanOnce sync.Once
	loans    map[string][]string
	pool     sync.Pool // *scratch
}

type scratch struct {
	score    []float64
	best     []float64
	hit      []bool
	touched  []int32
	cTouch   []int32
	words    []string
	terms    []string
	exp      map[string][]expansion
	concepts []concept
	lemmas   []string
	rel      []wordnet.Related
	trans    map[string][]string // CJK query term → its translations (terms)
	single   []string            // single-character CJK words with translations
	tcache   map[int][]string
}

// NewIndex builds the index. Cost is linear in the text indexed (some tens of
// milliseconds for 1,000 tools with long descriptions, BenchmarkNewIndex):
// build it once per catalog version and share it, never per query or per exec.
func NewIndex(docs []Doc) *Index {
	ix := &Index{
		docs:  docs,
		terms: map[string]*term{},
		exact: map[string][]int32{},
		vocab: map[string]uint8{},
		dict:  dictionary(),
	}
	if knobs.noCedict {
		ix.dict = nil
	}
	n := len(docs)

	// Pass 1: words per field, the raw vocabulary (for compound splitting)
	// and the exact-name keys.
	fieldWords := make([][numFields][]string, n)
	// The fields' texts first, so that the arena — it holds all the words, and fieldWords slice
	// it: one buffer, not one per field — is sized from all of them (about one word per 6 bytes of
	// English, one per 3 of CJK). Growing it mid-way copied half a million strings at 10,000 tools
	// and kept the old buffer alive for the collector to scan.
	allTexts := make([][numFields]string, n)
	size := 0
	for i, d := range docs {
		t := &allTexts[i]
		*t = [numFields]string{
			fName:   textcut.Prefix(d.Name, maxFieldBytes),
			fTitle:  textcut.Prefix(d.Title, maxFieldBytes),
			fParams: textcut.Prefix(strings.Join(d.Params, " "), maxDescriptionBytes),
			fDesc:   textcut.Prefix(d.Description, maxDescriptionBytes),
			fGroup:  textcut.Prefix(d.Group, maxFieldBytes),
			fLead:   leadSentence(d.Description),
		}
		if fieldWeight[fParamDocs] > 0 && !knobs.noParamDocs {
			t[fParamDocs] = paramDocsText(d.ParamDocs)
		}
		for _, text := range t {
			size += len(text)
		}
	}
	arena := make([]string, 0, size/5+16)
	for i, d := range docs {
		texts := allTexts[i]
		allTexts[i] = [numFields]string{}
		for f, text := range texts {
			if text == "" {
				continue
			}
			start := len(arena)
			arena = splitWords(text, arena)
			words := arena[start:len(arena):len(arena)]
			fieldWords[i][f] = words
			if f == fLead || f == fParamDocs {
				continue // a prefix of the description; prose about parameters, not names
			}
			flag := uint8(vocabWord)
			if f == fDesc || f == fTitle {
				flag |= vocabProse
			}
			for _, w := range words {
				if len(w) >= 3 && isASCIIAlpha(w) && !stopwords[w] {
					if v, ok := ix.vocab[w]; !ok || v&flag != flag {
						ix.vocab[w] = v | flag
					}
				}
			}
		}
		keys := []string{normKey(d.Name), normKey(d.ID), normKey(d.Group + d.Name)}
		for j, k := range keys {
			if k == "" || (j > 0 && (k == keys[0] || (j == 2 && k == keys[1]))) {
				continue
			}
			ix.exact[k] = append(ix.exact[k], int32(i))
		}
	}

	// Pass 2: per-field term counts (clipped at maxTF) and field lengths.
	type termCount struct {
		tm *term
		c  [numFields]uint16
	}
	perDoc := make([][]termCount, n)
	lens := make([][numFields]int, n)
	var sumLen [numFields]float64
	var terms []string
	var trans []string
	tcache := map[int][]string{}
	plain := &cjkCtx{d: ix.dict}
	translating := &cjkCtx{d: ix.dict, seg: func(_ string, head int) {
		t, ok := tcache[head]
		if !ok {
			for _, e := range translations(ix.dict, head, nil) {
				if len(t) == maxDocTranslations {
					break
				}
				t = append(t, "~"+e)
			}
			tcache[head] = t
		}
		if len(trans)+len(t) <= maxTransTerms {
			trans = append(trans, t...)
		}
	}, loan: func(w string) {
		for _, t := range ix.loanTerms(loanSkeleton(w)) {
			if len(trans) < maxTransTerms {
				trans = append(trans, "~"+t)
			}
		}
	}}
	for i := range docs {
		var tcs []termCount
		trans = trans[:0]
		for f, words := range fieldWords[i] {
			if f == fTrans {
				words = trans // filled by the fields before it
			}
			if len(words) == 0 {
				continue
			}
			switch f {
			case fTrans:
				terms = append(terms[:0], trans...)
			case fLead, fGroup:
				terms = analyzeWordsCJK(words, terms[:0], plain)
			default:
				terms = analyzeWordsCJK(words, terms[:0], translating)
			}
			if f == fName || f == fTitle || f == fGroup {
				terms = ix.addCompoundParts(words, terms)
			}
			for _, t := range terms {
				// One map access per occurrence; the term remembers its slot in this doc.
				tm := ix.terms[t]
				if tm == nil {
					tm = &term{lastDoc: -1}
					ix.terms[t] = tm
				}
				if tm.lastDoc != int32(i) {
					tm.lastDoc, tm.slot = int32(i), int32(len(tcs))
					tm.df++
					tcs = append(tcs, termCount{tm: tm})
				}
				if c := &tcs[tm.slot].c[f]; *c < maxTF {
					*c++
				}
			}
			lens[i][f] = len(terms)
			sumLen[f] += float64(len(terms))
		}
		perDoc[i] = tcs
		fieldWords[i] = [numFields][]string{}
	}
	var avgLen [numFields]float64
	for f := range avgLen {
		avgLen[f] = 1
		if n > 0 && sumLen[f] > 0 {
			avgLen[f] = sumLen[f] / float64(n)
		}
	}

	// Pass 3: postings with the BM25F pseudo-frequency
	// Σ_f weight_f · count_f / (1 − b_f + b_f · len_f / avglen_f).
	for i, tcs := range perDoc {
		weight, b := fieldWeight, fieldB
		if knobs.plainFields {
			weight = [numFields]float64{fName: 1, fDesc: 1}
			b = [numFields]float64{fName: 0.75, fDesc: 0.75}
		}
		var norm [numFields]float64
		for f := range norm {
			norm[f] = 1 - b[f] + b[f]*float64(lens[i][f])/avgLen[f]
		}
		for _, tc := range tcs {
			var v float64
			for f, c := range tc.c {
				if c > 0 && weight[f] > 0 {
					v += weight[f] * float64(c) / norm[f]
				}
			}
			if v == 0 {
				continue
			}
			if tc.tm.postings == nil {
				tc.tm.postings = make([]posting, 0, tc.tm.df)
			}
			tc.tm.postings = append(tc.tm.postings, posting{doc: int32(i), tf: float32(v)})
		}
		perDoc[i] = nil
	}
	for t, tm := range ix.terms {
		if len(tm.postings) == 0 { // only in fields weighted 0
			delete(ix.terms, t)
			continue
		}
		df := float64(len(tm.postings))
		tm.idf = math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
	}
	ix.pool.New = func() any {
		return &scratch{
			score: make([]float64, n),
			best:  make([]float64, n),
			hit:   make([]bool, n),
			exp:   map[string][]expansion{},
			trans: map[string][]string{},
		}
	}
	return ix
}

// maxCompound bounds the words compound splitting looks at (the split is
// quadratic in the word length).
const maxCompound = 40

const (
	vocabWord  = 1 << iota // seen in any field
	vocabProse             // seen in a description: a real word, not a compound
)

// addCompoundParts adds the parts of run-together identifiers
// ("sequentialthinking" → sequential, thinking; "heapsnapshot" → heap,
// snapshot) when every part is a word seen elsewhere in the corpus. Words that
// descriptions use as words ("workflow", "namespace") are left alone.
func (ix *Index) addCompoundParts(words, terms []string) []string {
	if knobs.noCompound {
		return terms
	}
	for _, w := range words {
		if len(w) < 7 || len(w) > maxCompound || !isASCIIAlpha(w) || ix.vocab[w]&vocabProse != 0 {
			continue
		}
		parts := ix.segment(w)
		for _, p := range parts {
			if !stopwords[p] {
				terms = append(terms, stem(p))
			}
		}
	}
	return terms
}

// segment splits w into the fewest (2–4) corpus words of at least 3 letters,
// or returns nil.
func (ix *Index) segment(w string) []string {
	n := len(w)
	const inf = 1 << 30
	cost := make([]int, n+1)
	prev := make([]int, n+1)
	for i := 1; i <= n; i++ {
		cost[i] = inf
		for j := 0; j+3 <= i; j++ {
			if cost[j] == inf || (j == 0 && i == n) {
				continue
			}
			if ix.vocab[w[j:i]]&vocabProse != 0 && cost[j]+1 < cost[i] {
				cost[i] = cost[j] + 1
				prev[i] = j
			}
		}
	}
	if cost[n] == inf || cost[n] > 4 {
		return nil
	}
	var parts []string
	for i := n; i > 0; i = prev[i] {
		parts = append(parts, w[prev[i]:i])
	}
	for l, r := 0, len(parts)-1; l < r; l, r = l+1, r-1 {
		parts[l], parts[r] = parts[r], parts[l]
	}
	return parts
}

// queryCJK is the analyzer context of a query: dictionary segments give the query concepts
// their translations (s.trans), and a single-character word that is not a term of its own
// becomes one (it can only match through its translations).
func (ix *Index) queryCJK(s *scratch) *cjkCtx {
	loan := func(w string) {
		if _, ok := s.trans[w]; ok {
			return
		}
		if t := ix.loanTerms(loanSkeleton(w)); len(t) > 0 {
			s.trans[w] = t
			s.single = append(s.single, w)
		}
	}
	if ix.dict == nil {
		return &cjkCtx{loan: loan}
	}
	if s.tcache == nil {
		s.tcache = map[int][]string{}
	}
	if len(s.tcache) > 4096 {
		clear(s.tcache)
	}
	return &cjkCtx{d: ix.dict, loan: loan, seg: func(key string, head int) {
		if _, ok := s.trans[key]; ok {
			return
		}
		t := translations(ix.dict, head, s.tcache)
		if len(t) == 0 {
			return
		}
		s.trans[key] = t
		if utf8.RuneCountInString(key) == 1 {
			s.single = append(s.single, key)
		}
	}}
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.docs) }

// Search ranks the documents for query and returns at most limit hits, best
// first. limit <= 0 returns none; an empty or whitespace-only query returns
// nil. A query equal to a tool's name or id (case-insensitive, separators
// ignored: "create issue", "createIssue", "mcp:github:create_issue",
// "github/create_issue") ranks that tool first. Ties are broken by doc order,
// so results are deterministic.
func (ix *Index) Search(query string, limit int) []Hit {
	return ix.SearchFilter(query, limit, nil)
}

// SearchFilter is Search over the documents for which keep returns true
// (keep == nil keeps all); e.g. one server only.
func (ix *Index) SearchFilter(query string, limit int, keep func(doc int) bool) []Hit {
	return ix.search(query, limit, keep)
}

func (ix *Index) search(query string, limit int, keep func(doc int) bool) []Hit {
	if limit <= 0 || strings.TrimSpace(query) == "" || len(ix.docs) == 0 {
		return nil
	}
	query = textcut.Prefix(query, maxQueryBytes)
	s := ix.pool.Get().(*scratch)
	defer ix.pool.Put(s)

	// Exact-name short-circuit.
	var exact []int32
	if e := ix.exact[normKey(query)]; len(e) > 0 && !knobs.noExact {
		for _, d := range e {
			if keep == nil || keep(int(d)) {
				exact = append(exact, d)
			}
		}
	}

	clear(s.trans)
	s.single = s.single[:0]
	s.words, s.terms = analyze(query, s.words, s.terms[:0], ix.queryCJK(s))
	s.terms = append(s.terms, s.single...)
	s.terms = ix.expandUnknown(s.words, s.terms)
	ix.expandWordNet(s)
	s.concepts = ix.concepts(s)
	s.touched = s.touched[:0]
	ix.scoreConcepts(s, s.concepts)
	lift := ix.serverLift(query, s)

	top := make([]Hit, 0, min(limit, len(s.touched)+len(exact)))
	isExact := func(d int32) bool {
		for _, e := range exact {
			if e == d {
				return true
			}
		}
		return false
	}
	// Exact matches first (by score, then doc order).
	if len(exact) > 0 {
		ex := make([]Hit, 0, len(exact))
		for _, d := range exact {
			ex = append(ex, Hit{ID: ix.docs[d].ID, Doc: int(d), Score: s.score[d]})
		}
		sort.SliceStable(ex, func(i, j int) bool { return better(ex[i], ex[j]) })
		if len(ex) > limit {
			ex = ex[:limit]
		}
		top = append(top, ex...)
	}
	want := limit
	rest := min(want, len(ix.docs)) - len(top)
	var ranked []Hit // the best `rest` hits so far, sorted once full
	if rest > 0 {
		ranked = make([]Hit, 0, rest)
	}
	for _, d := range s.touched {
		sc := s.score[d]
		sc += ix.liftOf(lift, int(d))
		s.score[d] = 0
		s.hit[d] = false
		if rest == 0 || sc <= 0 || (keep != nil && !keep(int(d))) || (len(exact) > 0 && isExact(d)) {
			continue
		}
		h := Hit{Doc: int(d), Score: sc}
		if len(ranked) < rest {
			ranked = append(ranked, h)
			if len(ranked) == rest {
				sort.Slice(ranked, func(i, j int) bool { return better(ranked[i], ranked[j]) })
			}
			continue
		}
		if !better(h, ranked[rest-1]) {
			continue
		}
		// Insert into the sorted top list, dropping the last.
		i := sort.Search(rest, func(i int) bool { return better(h, ranked[i]) })
		copy(ranked[i+1:], ranked[i:rest-1])
		ranked[i] = h
	}
	if len(ranked) < rest {
		sort.Slice(ranked, func(i, j int) bool { return better(ranked[i], ranked[j]) })
	}
	out := append(top, ranked...)
	return ix.finish(s, out, lift, limit)
}

// scoreConcepts adds the concepts' scores to s.score (s.touched lists the documents touched).
func (ix *Index) scoreConcepts(s *scratch, cs []concept) {
	for _, c := range cs {
		s.cTouch = s.cTouch[:0]
		for _, a := range c.alts {
			ix.scoreTerm(s, a.tm, a.w)
		}
		for _, d := range s.cTouch {
			if !s.hit[d] {
				s.hit[d] = true
				s.touched = append(s.touched, d)
			}
			s.score[d] += s.best[d]
			s.best[d] = 0
		}
	}
}

// better orders hits: higher score first, then lower doc position.
func better(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Doc < b.Doc
}

// scoreTerm folds one query term (weight w) into the current concept: each
// document keeps the best of the literal term and its synonyms.
func (ix *Index) scoreTerm(s *scratch, tm *term, w float64) {
	f := w * tm.idf * (k1 + 1)
	for _, p := range tm.postings {
		tf := float64(p.tf)
		v := f * tf / (tf + k1)
		if b := s.best[p.doc]; v > b {
			if b == 0 {
				s.cTouch = append(s.cTouch, p.doc)
			}
			s.best[p.doc] = v
		}
	}
}

// expandUnknown splits query words the index does not know into known corpus
// words ("crashlooping" → crash, looping), the mirror of compound splitting at
// index time.
func (ix *Index) expandUnknown(words, terms []string) []string {
	if knobs.noCompound {
		return terms
	}
	for _, w := range words {
		if len(w) < 6 || len(w) > maxCompound || !isASCIIAlpha(w) || stopwords[w] {
			continue
		}
		if _, ok := ix.terms[stem(w)]; ok {
			continue
		}
		for _, p := range ix.segment(w) {
			if !stopwords[p] {
				terms = append(terms, stem(p))
			}
		}
	}
	return terms
}

// Parameter descriptions are indexed by their opening words only: maxParamDoc bytes of each,
// maxParamDocs in all (schemas can describe every field at length; cost and weight stay bounded).
const (
	maxParamDoc  = 96
	maxParamDocs = 768
)

func paramDocsText(docs []string) string {
	var b strings.Builder
	for _, d := range docs {
		if d == "" {
			continue
		}
		d = textcut.Prefix(d, maxParamDoc)
		if b.Len()+len(d)+1 > maxParamDocs {
			break
		}
		b.WriteString(d)
		b.WriteByte('\n')
	}
	return b.String()
}

// leadSentence is the description's first sentence (at most 300 bytes), where
// tools say what they do.
func leadSentence(desc string) string {
	desc = strings.TrimSpace(textcut.Prefix(desc, 300))
	for i := 0; i < len(desc); i++ {
		if desc[i] == '\n' || (desc[i] == '.' && (i+1 == len(desc) || desc[i+1] == ' ')) {
			if i >= 15 {
				return desc[:i]
			}
		}
	}
	return desc
}

// Options are NewIndexWith's optional inputs.
type Options struct {
	// Servers describe the groups (MCP servers) of the documents: their text is
	// evidence for their tools (issue 23 item 3).
	Servers []Server
}

// Server is what one server (a Doc.Group) says about itself.
type Server struct {
	Group                                  string // the Doc.Group it describes
	Name, Title, Description, Instructions string // untrusted; bounded when indexed
}

// NewIndexWith is NewIndex with options.
func NewIndexWith(docs []Doc, opts Options) *Index {
	ix := NewIndex(docs)
	if len(opts.Servers) == 0 {
		return ix
	}
	pos := map[string]int32{}
	var sdocs []Doc
	for _, sv := range opts.Servers {
		if _, dup := pos[sv.Group]; dup || sv.Group == "" {
			continue
		}
		pos[sv.Group] = int32(len(sdocs))
		sdocs = append(sdocs, Doc{
			ID: sv.Group, Name: sv.Group + " " + textcut.Prefix(sv.Name, maxFieldBytes),
			Title:       textcut.Prefix(sv.Title, maxFieldBytes),
			Description: textcut.Prefix(sv.Description, maxDescriptionBytes) + "\n" + textcut.Prefix(sv.Instructions, maxDescriptionBytes),
		})
	}
	ix.servers = NewIndex(sdocs)
	ix.group = make([]int32, len(docs))
	for i, d := range docs {
		g, ok := pos[d.Group]
		if !ok {
			g = -1
		}
		ix.group[i] = g
	}
	return ix
}

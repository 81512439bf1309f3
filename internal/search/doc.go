// Package search ranks catalog tools for a free-text query: the engine behind
// tools.search(query, {limit}) and MCP.$search(query, {limit, server})
// (docs/semantics.md K5).
//
// # Model
//
// The ranking is BM25F: each tool is a document with fields (name, title,
// parameter names, description, the description's first sentence, the
// server/plugin group, parameter descriptions, translated terms); a query
// term's frequency is weighted and length-normalised per field, summed, and
// saturated once. The name weighs
// most (tool names are short and dense), then the title, the description and
// parameter names, then the group. Descriptions are untrusted and can be huge,
// so only their first 2 KB are indexed.
//
// On top of plain BM25F:
//
//   - Identifier splitting: create_issue, linear_createIssue, API-get-user,
//     getHTTPResponse and browser.take.screenshot all become words; compounds
//     with no separators (sequentialthinking, heapsnapshot, keyvault) are split
//     into corpus words, on both the tool and the query side.
//   - Light stemming (a suffix stripper for plurals, -ing, -ed, -ation, -ment,
//     final e) and a few abbreviations (pr → pull request, repo → repository).
//   - Term counts are clipped per field and only a bounded prefix of each
//     field is read, so repeating words in an (untrusted) description does not
//     buy rank.
//   - A small hand-written synonym layer applied to query terms: a synonym
//     scores half what the literal term would, and for each query term a tool
//     keeps the best of the term and its synonyms (so synonyms never stack).
//     When the catalog never uses the query's word, its synonyms count fully.
//   - Unicode-aware analysis (script.go): NFKC, Latin diacritics folded, a
//     script change ends a word, CJK/Hangul/Thai runs become character
//     bigrams, English stemming only for ASCII words.
//   - WordNet expansion of query words (expand.go, package wordnet): synonyms
//     and derived forms of a word's frequent senses, weighted below the literal
//     word, best-of with the hand-written synonyms.
//   - Server evidence (Options.Servers, evidence.go): a BM25 index of servers'
//     self-descriptions; a server matching the query lifts its matching tools.
//   - Chinese and Japanese with a dictionary (cjk.go, package cedict): traditional and
//     Japanese characters read as simplified, dictionary words beside the bigrams, and
//     translations both ways (a tool's translated terms "~term", a query's translations),
//     weighted below literal matches; Japanese cut at script changes (hiragana dropped).
//   - Loanwords (translit.go): katakana and hangul words meet the catalog's English words by
//     consonant skeleton (アップロード, 업로드 → upload).
//   - Cognates (cognate.go): a word the catalog lacks meets the catalog words it is a
//     near-prefix of (Spanish diagrama → diagram).
//   - Parameter descriptions (Doc.ParamDocs, SchemaParams): their opening words, weighted low.
//   - An explanation per hit (Hit.Why).
//   - Exact-name short-circuit: a query equal to a tool's name or id (case and
//     separators ignored) ranks that tool first.
//   - Deterministic order: by score, then by position in the catalog.
//
// # Cost
//
// NewIndex is linear in the text indexed (some tens of milliseconds for 1,000
// tools with long descriptions, BenchmarkNewIndex) and is meant to run once per
// catalog version; the Index is immutable and safe for concurrent Search. A
// query costs a few microseconds at 1,000 tools (BenchmarkSearch1000, and the
// latency figures of searcheval): the postings of the query terms and their
// synonyms are walked once, into pooled per-query buffers.
//
// # Quality
//
// Package searcheval measures recall@k and MRR on a real 667-tool catalog of
// 25 MCP servers with a labelled query set (testdata/); its test is the
// quality gate (recall@5 ≥ 0.90, MRR ≥ 0.75 in both the native and the MCP
// presentation). testdata/README.md has the figures.
package search

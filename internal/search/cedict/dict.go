package cedict

import (
	"encoding/binary"
	"hash/maphash"
	"unicode/utf8"
)

// Dict is a parsed index: immutable, safe for concurrent use. Headwords are found by a hash of
// their bytes (checked against the stored word), so a lookup is one map access.
type Dict struct {
	variants map[rune]rune
	english  []string
	text     string   // all headwords, concatenated
	hoff     []uint32 // headword i is text[hoff[i]:hoff[i+1]]
	terms    []uint32 // English ids of headword i: terms[toff[i]:toff[i+1]]
	toff     []uint32
	byHash   map[uint64]uint32
	maxLen   map[rune]uint8   // longest headword (in characters) starting with a character
	maxLen2  map[uint64]uint8 // longest headword (2+ characters) starting with two characters
	seed     maphash.Seed
	bytes    int
}

// Parse reads an index made by Derive, checking its structure fully (a cached or embedded file
// was verified by sha256 already; this is the second line against a corrupt one).
func Parse(b []byte) (*Dict, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, errCorrupt
	}
	p := b[len(magic):]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	nv, ok := next()
	if !ok || nv > 1<<20 {
		return nil, errCorrupt
	}
	d := &Dict{variants: make(map[rune]rune, nv), seed: maphash.MakeSeed(), bytes: len(b)}
	for i := uint64(0); i < nv; i++ {
		f, ok1 := next()
		t, ok2 := next()
		if !ok1 || !ok2 || f > utf8.MaxRune || t > utf8.MaxRune {
			return nil, errCorrupt
		}
		d.variants[rune(f)] = rune(t)
	}
	words := func(n uint64, maxLen uint64, each func(w string) bool) bool {
		prev := ""
		for i := uint64(0); i < n; i++ {
			s, ok1 := next()
			l, ok2 := next()
			if !ok1 || !ok2 || s > uint64(len(prev)) || l > maxLen || l > uint64(len(p)) {
				return false
			}
			w := prev[:s] + string(p[:l])
			p = p[l:]
			if (i > 0 && w <= prev) || w == "" {
				return false
			}
			if !each(w) {
				return false
			}
			prev = w
		}
		return true
	}
	ne, ok := next()
	if !ok || ne > 1<<22 {
		return nil, errCorrupt
	}
	d.english = make([]string, 0, ne)
	var eb []byte
	var eoff []int
	if !words(ne, maxWordLen, func(w string) bool { eoff = append(eoff, len(eb)); eb = append(eb, w...); return true }) {
		return nil, errCorrupt
	}
	all := string(eb) // one allocation for the ~30,000 words
	for i, o := range eoff {
		end := len(all)
		if i+1 < len(eoff) {
			end = eoff[i+1]
		}
		d.english = append(d.english, all[o:end])
	}
	nh, ok := next()
	if !ok || nh > 1<<22 {
		return nil, errCorrupt
	}
	d.hoff = make([]uint32, 0, nh+1)
	d.toff = make([]uint32, 0, nh+1)
	d.byHash = make(map[uint64]uint32, nh)
	d.maxLen = map[rune]uint8{}
	d.maxLen2 = make(map[uint64]uint8, nh/2)
	text := make([]byte, 0, len(p))
	ok = words(nh, maxHead*utf8.UTFMax, func(w string) bool {
		d.hoff = append(d.hoff, uint32(len(text)))
		d.toff = append(d.toff, uint32(len(d.terms)))
		text = append(text, w...)
		c, ok := next()
		if !ok || c == 0 || c > maxTerms {
			return false
		}
		for j := uint64(0); j < c; j++ {
			id, ok := next()
			if !ok || id >= ne {
				return false
			}
			d.terms = append(d.terms, uint32(id))
		}
		h := maphash.String(d.seed, w)
		if _, dup := d.byHash[h]; dup {
			return false // a 64-bit collision among ~10⁵ words: refuse rather than mis-translate
		}
		d.byHash[h] = uint32(len(d.hoff) - 1)
		r, size := utf8.DecodeRuneInString(w)
		n := uint8(utf8.RuneCountInString(w))
		if n > d.maxLen[r] {
			d.maxLen[r] = n
		}
		if n >= 2 {
			r2, _ := utf8.DecodeRuneInString(w[size:])
			if k := pair(r, r2); n > d.maxLen2[k] {
				d.maxLen2[k] = n
			}
		}
		return true
	})
	if !ok || len(p) != 0 {
		return nil, errCorrupt
	}
	d.hoff = append(d.hoff, uint32(len(text)))
	d.toff = append(d.toff, uint32(len(d.terms)))
	d.text = string(text)
	return d, nil
}

// Size is the encoded size in bytes.
func (d *Dict) Size() int { return d.bytes }

// Len is the number of headwords.
func (d *Dict) Len() int { return len(d.hoff) - 1 }

// Variant maps a traditional or Japanese form of a character to its simplified form, or
// returns r.
func (d *Dict) Variant(r rune) rune {
	if v, ok := d.variants[r]; ok {
		return v
	}
	return r
}

// MaxLen is the length in characters of the longest headword that starts with r (0: none).
func (d *Dict) MaxLen(r rune) int { return int(d.maxLen[r]) }

// MaxLen2 is the length in characters of the longest headword of two or more characters that
// starts with r1 r2 (0: none).
func (d *Dict) MaxLen2(r1, r2 rune) int { return int(d.maxLen2[pair(r1, r2)]) }

func pair(r1, r2 rune) uint64 { return uint64(r1)<<21 | uint64(r2) }

// Find returns the index of headword w (simplified), or -1.
func (d *Dict) Find(w string) int {
	i, ok := d.byHash[maphash.String(d.seed, w)]
	if !ok || d.text[d.hoff[i]:d.hoff[i+1]] != w {
		return -1
	}
	return int(i)
}

// English appends the English words of headword i (from Find), best first.
func (d *Dict) English(i int, out []string) []string {
	for _, id := range d.terms[d.toff[i]:d.toff[i+1]] {
		out = append(out, d.english[id])
	}
	return out
}

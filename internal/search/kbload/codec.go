package kbload

import "encoding/binary"

// The knowledge bases' index files share one encoding: a magic string (its last byte the format
// version), uvarints, and sorted word lists front-coded — each word as the length of the prefix
// it shares with the word before it, the length of the rest, and the rest's bytes. The bytes are
// pinned by sha256, so this encoding is part of every pin: changing it moves the pins.

// AppendFrontCoded appends the sorted words front-coded to out. after, when not nil, appends
// what the index keeps after each word.
func AppendFrontCoded(out []byte, words []string, after func(out []byte, w string) []byte) []byte {
	prev := ""
	for _, w := range words {
		s := 0
		for s < len(prev) && s < len(w) && prev[s] == w[s] {
			s++
		}
		out = binary.AppendUvarint(out, uint64(s))
		out = binary.AppendUvarint(out, uint64(len(w)-s))
		out = append(out, w[s:]...)
		if after != nil {
			out = after(out, w)
		}
		prev = w
	}
	return out
}

// Reader reads an index from its first byte after the magic. Every read is bounded by the bytes
// left: a short or malformed index makes a read report false, never panic (the bytes may come
// from a hostile cache).
type Reader struct {
	// Rest is what has not been read yet.
	Rest []byte
}

// NewReader starts reading b after magic; false when b does not start with it.
func NewReader(b []byte, magic string) (*Reader, bool) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, false
	}
	return &Reader{Rest: b[len(magic):]}, true
}

// Uvarint reads one uvarint.
func (r *Reader) Uvarint() (uint64, bool) {
	v, n := binary.Uvarint(r.Rest)
	if n <= 0 {
		return 0, false
	}
	r.Rest = r.Rest[n:]
	return v, true
}

// Word reads the front-coded word that follows prev: false when it would share more than prev
// has or its rest is longer than maxLen bytes or than the index. Whether the words are in order
// is the caller's check.
func (r *Reader) Word(prev string, maxLen uint64) (string, bool) {
	s, ok1 := r.Uvarint()
	l, ok2 := r.Uvarint()
	if !ok1 || !ok2 || s > uint64(len(prev)) || l > maxLen || l > uint64(len(r.Rest)) {
		return "", false
	}
	w := prev[:s] + string(r.Rest[:l])
	r.Rest = r.Rest[l:]
	return w, true
}

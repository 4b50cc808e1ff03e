package codeindex

import (
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// Literal is a run of bytes every match of a regexp contains, each
// position a set of bytes (one byte for a plain literal, both cases of an
// ASCII letter under (?i), a small ASCII class).
type Literal [][]byte

// maxClass bounds the bytes of a class taken into a literal.
const maxClass = 16

// Literals returns the runs of at least four bytes that every match of re
// contains: consecutive literal characters and small ASCII classes of the
// top-level concatenation (the whole regexp if it is one). A run that
// cannot be spelt in bytes (a case-folded letter whose fold is not ASCII,
// as k and the Kelvin sign) ends there. They complement the trigram
// query, which says which trigrams a file must hold but not that they are
// adjacent.
func Literals(re *syntax.Regexp) []Literal {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	var out []Literal
	var cur Literal
	end := func() {
		if len(cur) >= 4 {
			out = append(out, cur)
		}
		cur = nil
	}
	for _, sub := range subs {
		for sub.Op == syntax.OpCapture {
			sub = sub.Sub[0]
		}
		switch sub.Op {
		case syntax.OpLiteral:
			for _, r := range sub.Rune {
				sets, ok := runeBytes(r, sub.Flags&syntax.FoldCase != 0)
				if !ok {
					end()
					continue
				}
				cur = append(cur, sets...)
			}
		case syntax.OpCharClass:
			set, ok := classBytes(sub.Rune)
			if !ok {
				end()
				continue
			}
			cur = append(cur, set)
		default:
			// Zero-width assertions, repeats, alternations: the bytes
			// either side need not be adjacent.
			end()
		}
	}
	end()
	return out
}

// runeBytes spells r as byte sets: its UTF-8 bytes, or under case folding
// both cases of an ASCII letter whose fold orbit is those two.
func runeBytes(r rune, fold bool) ([][]byte, bool) {
	if !fold {
		var b [utf8.UTFMax]byte
		n := utf8.EncodeRune(b[:], r)
		sets := make([][]byte, n)
		for i := range n {
			sets[i] = []byte{b[i]}
		}
		return sets, true
	}
	set := []byte{}
	for f := r; ; {
		if f >= utf8.RuneSelf {
			return nil, false
		}
		set = append(set, byte(f))
		if f = unicode.SimpleFold(f); f == r {
			break
		}
	}
	return [][]byte{set}, true
}

// classBytes returns the bytes of a class of ASCII runes, if it is small.
func classBytes(ranges []rune) ([]byte, bool) {
	var set []byte
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		if hi >= utf8.RuneSelf || int(hi-lo)+1+len(set) > maxClass {
			return nil, false
		}
		for r := lo; r <= hi; r++ {
			set = append(set, byte(r))
		}
	}
	return set, len(set) > 0
}

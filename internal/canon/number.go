package canon

import (
	"math"
	"strconv"
)

// AppendNumber appends f to dst as ECMAScript's Number.prototype.toString writes it, which
// is the form RFC 8785 section 3.2.2.3 requires: the shortest decimal digits that read back
// as f (the closest such digits when several qualify), in plain decimal notation when
// 1e-7 < |f| < 1e21 (for example 0.000001, 123.45, 100000000000000000000), otherwise as
// one digit, an optional fraction, "e" and a signed exponent (1e+21, 1.5e-7). Negative
// zero is written as 0.
//
// NaN and ±Inf have no JSON form: for them AppendNumber returns dst unchanged and an
// [*Error] with Offset -1. It returns no other error.
func AppendNumber(dst []byte, f float64) ([]byte, error) {
	switch {
	case f != f:
		return dst, &Error{Offset: -1, Reason: reasonNumberNaN}
	case f > math.MaxFloat64:
		return dst, &Error{Offset: -1, Reason: reasonNumberInfPos}
	case f < -math.MaxFloat64:
		return dst, &Error{Offset: -1, Reason: reasonNumberInfNeg}
	case f == 0:
		return append(dst, '0'), nil
	}
	// Every integer of magnitude below 2^53 is exact, and its shortest round-trip digits
	// are all of its digits (no other integer lies within half an ulp), so the plain
	// integer form is the ECMAScript form.
	if f == math.Trunc(f) && f > -(1<<53) && f < 1<<53 {
		return strconv.AppendInt(dst, int64(f), 10), nil
	}
	return appendFloat(dst, f), nil
}

// appendFloat is AppendNumber for finite, nonzero f.
func appendFloat(dst []byte, f float64) []byte {
	// strconv's shortest formatting chooses the same digits ECMAScript does (the
	// fewest that round-trip, the closest to f among those); only the layout differs.
	// 'e' gives them as d[.ddd]e±XX, which we take apart.
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	if b[0] == '-' {
		dst = append(dst, '-')
		b = b[1:]
	}
	var digits [24]byte
	k := 0
	i := 0
	for ; b[i] != 'e'; i++ {
		if b[i] != '.' {
			digits[k] = b[i]
			k++
		}
	}
	i++ // 'e'
	expNeg := b[i] == '-'
	exp := 0
	for i++; i < len(b); i++ {
		exp = exp*10 + int(b[i]-'0')
	}
	if expNeg {
		exp = -exp
	}
	// The value is 0.d1d2…dk × 10^n, ECMAScript's n.
	n := exp + 1
	d := digits[:k]
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 < 0 {
			dst = append(dst, '-')
			dst = strconv.AppendInt(dst, int64(1-n), 10)
		} else {
			dst = append(dst, '+')
			dst = strconv.AppendInt(dst, int64(n-1), 10)
		}
	}
	return dst
}

// parseNumber reads the number at the scanner (RFC 8259 section 6 grammar, checked by the
// tokenizer) and appends its JCS form to p.out.
func (p *parser) parseNumber() error {
	t, err := p.s.ReadNumber()
	if err != nil {
		return err
	}
	tok := p.in[t.Start:t.End]
	intDigits := len(tok)
	if tok[0] == '-' {
		intDigits--
	}
	// An integer of at most 15 digits is below 2^53, so it is exact and already in JCS
	// form (the grammar rules out leading zeros), except that -0 is written 0.
	if t.Integer && intDigits <= 15 {
		if intDigits == 1 && tok[len(tok)-1] == '0' {
			p.out = append(p.out, '0')
		} else {
			p.out = append(p.out, tok...)
		}
		return nil
	}
	// The token matches the JSON grammar, which strconv accepts, so the only possible
	// error is ErrRange. strconv rounds correctly; it reports ErrRange with ±Inf for
	// overflow (refused: Infinity has no JSON form, and clamping would merge distinct
	// inputs) and returns 0 or a subnormal without error for underflow, which is the
	// IEEE-754 reading of the text and so is accepted.
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return p.errAt(t.Start, reasonOverflow)
	}
	p.out, _ = AppendNumber(p.out, f)
	return nil
}

package warrant

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/canon"
)

// Digest identifies one exact tool definition: "sha256:" and the 64 lower-case hex digits of
// the SHA-256 of the RFC 8785 canonical JSON of the tool object as served.
type Digest string

// DigestPrefix starts every Digest.
const DigestPrefix = "sha256:"

// DigestTool canonicalizes the raw tool object exactly as served and returns its digest and
// canonical form. It refuses what canon refuses (invalid UTF-8, lone surrogates, duplicate
// names, ...) with a *canon.Error naming the byte offset in raw, and a JSON value that is
// not an object.
func DigestTool(raw []byte) (Digest, []byte, error) {
	c, err := canon.Transform(raw)
	if err != nil {
		return "", nil, err
	}
	if len(c) == 0 || c[0] != '{' {
		return "", nil, &canon.Error{Offset: 0, Reason: "a tool definition must be a JSON object"}
	}
	return DigestOf(c), c, nil
}

// DigestOf returns the digest of bytes that are already canonical.
func DigestOf(canonical []byte) Digest {
	sum := sha256.Sum256(canonical)
	return Digest(DigestPrefix + hex.EncodeToString(sum[:]))
}

// ParseDigest accepts "sha256:" followed by 64 hex digits, or the 64 hex digits alone, in
// either case, and returns the canonical lower-case form. ErrInvalid otherwise.
func ParseDigest(s string) (Digest, error) {
	h := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), DigestPrefix)
	if len(h) != 64 || !isHex(h) {
		return "", fmt.Errorf("%w: %q is not a digest (sha256: followed by 64 hex digits)", ErrInvalid, s)
	}
	return Digest(DigestPrefix + h), nil
}

// Valid reports whether d is in canonical form.
func (d Digest) Valid() bool {
	h, ok := strings.CutPrefix(string(d), DigestPrefix)
	return ok && len(h) == 64 && isHex(h) && strings.ToLower(h) == h
}

// Hex returns the 64 hex digits.
func (d Digest) Hex() string { return strings.TrimPrefix(string(d), DigestPrefix) }

// Short returns "sha256:" and the first 12 hex digits, for tables.
func (d Digest) Short() string {
	if len(d) < len(DigestPrefix)+12 {
		return string(d)
	}
	return string(d[:len(DigestPrefix)+12])
}

// String returns d.
func (d Digest) String() string { return string(d) }

// MatchDigest returns the one digest of candidates that s names: a full digest, or a prefix
// of at least 8 hex digits (with or without "sha256:"). ErrNotFound when none matches,
// ErrInvalid when s is malformed or the prefix is ambiguous.
func MatchDigest(candidates []Digest, s string) (Digest, error) {
	h := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), DigestPrefix)
	if len(h) < 8 || len(h) > 64 || !isHex(h) {
		return "", fmt.Errorf("%w: %q is not a digest or a prefix of at least 8 hex digits", ErrInvalid, s)
	}
	var found []Digest
	seen := map[Digest]bool{}
	for _, c := range candidates {
		if strings.HasPrefix(c.Hex(), h) && !seen[c] {
			seen[c] = true
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("version %s: %w", s, ErrNotFound)
	case 1:
		return found[0], nil
	default:
		return "", fmt.Errorf("%w: %q matches %d versions; give more digits", ErrInvalid, s, len(found))
	}
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

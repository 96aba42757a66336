package sshsig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

const (
	magic       = "SSHSIG"
	sigVersion  = 1
	armorBegin  = "-----BEGIN SSH SIGNATURE-----"
	armorEnd    = "-----END SSH SIGNATURE-----"
	maxArmorLen = 64 << 10
)

// Errors.
var (
	// ErrMalformed: the text is not an SSH signature.
	ErrMalformed = errors.New("malformed SSH signature")
	// ErrBadSignature: the signature does not verify for this message and namespace.
	ErrBadSignature = errors.New("SSH signature does not verify")
)

// signedData is what the key actually signs (PROTOCOL.sshsig): the magic preamble,
// namespace, reserved, hash algorithm and H(message).
func signedData(namespace, hashAlg string, message []byte) ([]byte, error) {
	var h []byte
	switch hashAlg {
	case "sha512":
		s := sha512.Sum512(message)
		h = s[:]
	case "sha256":
		s := sha256.Sum256(message)
		h = s[:]
	default:
		return nil, fmt.Errorf("%w: hash algorithm %q", ErrMalformed, hashAlg)
	}
	b := []byte(magic)
	b = appendString(b, []byte(namespace))
	b = appendString(b, nil)
	b = appendString(b, []byte(hashAlg))
	return appendString(b, h), nil
}

// Signature is a parsed SSH signature.
type Signature struct {
	PublicKey PublicKey
	Namespace string
	HashAlg   string
	// SigType and Sig are the inner signature's algorithm name and bytes.
	SigType string
	Sig     []byte
}

// armor wraps the blob as ssh-keygen does: 70 base64 characters per line.
func armor(blob []byte) []byte {
	enc := base64.StdEncoding.EncodeToString(blob)
	var b strings.Builder
	b.WriteString(armorBegin + "\n")
	for len(enc) > 70 {
		b.WriteString(enc[:70] + "\n")
		enc = enc[70:]
	}
	b.WriteString(enc + "\n" + armorEnd + "\n")
	return []byte(b.String())
}

// Parse reads an armored SSH signature strictly.
func Parse(armored []byte) (Signature, error) {
	if len(armored) > maxArmorLen {
		return Signature{}, fmt.Errorf("%w: too long", ErrMalformed)
	}
	s := strings.TrimSpace(string(armored))
	body, ok := strings.CutPrefix(s, armorBegin)
	if !ok {
		return Signature{}, fmt.Errorf("%w: no %s line", ErrMalformed, armorBegin)
	}
	body, ok = strings.CutSuffix(body, armorEnd)
	if !ok {
		return Signature{}, fmt.Errorf("%w: no %s line", ErrMalformed, armorEnd)
	}
	blob, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(body), ""))
	if err != nil {
		return Signature{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	r := &reader{b: blob}
	if string(r.bytes(len(magic))) != magic || r.uint32() != sigVersion {
		return Signature{}, fmt.Errorf("%w: not an SSHSIG version 1 blob", ErrMalformed)
	}
	pubBlob := r.string()
	var sig Signature
	sig.Namespace = string(r.string())
	_ = r.string() // reserved
	sig.HashAlg = string(r.string())
	inner := r.string()
	if r.err != nil || len(r.b) != 0 {
		return Signature{}, fmt.Errorf("%w: truncated or trailing data", ErrMalformed)
	}
	if sig.PublicKey, err = ParsePublicKey(pubBlob); err != nil {
		return Signature{}, err
	}
	ir := &reader{b: inner}
	sig.SigType = string(ir.string())
	sig.Sig = bytes.Clone(ir.string())
	if ir.err != nil || len(ir.b) != 0 {
		return Signature{}, fmt.Errorf("%w: inner signature", ErrMalformed)
	}
	return sig, nil
}

// Verify checks an armored signature over message in namespace and returns the public key
// that made it; the caller decides whether that key is trusted.
func Verify(armored, message []byte, namespace string) (PublicKey, error) {
	sig, err := Parse(armored)
	if err != nil {
		return PublicKey{}, err
	}
	if sig.Namespace != namespace {
		return PublicKey{}, fmt.Errorf("%w: namespace %q, want %q", ErrBadSignature, sig.Namespace, namespace)
	}
	data, err := signedData(namespace, sig.HashAlg, message)
	if err != nil {
		return PublicKey{}, err
	}
	ok := false
	switch k := sig.PublicKey.Key.(type) {
	case ed25519.PublicKey:
		ok = sig.SigType == TypeEd25519 && ed25519.Verify(k, data, sig.Sig)
	case *ecdsa.PublicKey:
		r := &reader{b: sig.Sig}
		rb, sb := r.string(), r.string()
		if sig.SigType == TypeECDSAP256 && r.err == nil && len(r.b) == 0 {
			h := sha256.Sum256(data)
			ok = ecdsa.Verify(k, h[:], new(big.Int).SetBytes(rb), new(big.Int).SetBytes(sb))
		}
	}
	if !ok {
		return PublicKey{}, ErrBadSignature
	}
	return sig.PublicKey, nil
}

// rawSigner makes the inner signature (algorithm name and bytes) over data.
type rawSigner interface {
	Public() PublicKey
	signRaw(data []byte) (sigType string, sig []byte, err error)
}

// Sign signs message in namespace with s and returns the armored signature, which
// `ssh-keygen -Y verify -n namespace` accepts.
func Sign(s rawSigner, message []byte, namespace string) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sshsig: empty namespace")
	}
	data, err := signedData(namespace, "sha512", message)
	if err != nil {
		return nil, err
	}
	typ, raw, err := s.signRaw(data)
	if err != nil {
		return nil, err
	}
	blob := []byte(magic)
	blob = appendUint32(blob, sigVersion)
	blob = appendString(blob, s.Public().Blob)
	blob = appendString(blob, []byte(namespace))
	blob = appendString(blob, nil)
	blob = appendString(blob, []byte("sha512"))
	blob = appendString(blob, appendString(appendString(nil, []byte(typ)), raw))
	return armor(blob), nil
}

func appendUint32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

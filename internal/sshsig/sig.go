package sshsig

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
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

// The SSHSIG blob (PROTOCOL.sshsig) in SSH wire format, for ssh.Marshal and ssh.Unmarshal:
// the magic and version, then the body. They are two structs so that a blob that is not
// SSHSIG version 1 is told apart from a truncated one.
type (
	envelope struct {
		Magic   [len(magic)]byte
		Version uint32
		Body    []byte `ssh:"rest"`
	}
	envelopeBody struct {
		PublicKey     []byte
		Namespace     string
		Reserved      string
		HashAlgorithm string
		Signature     []byte // an ssh.Signature in wire format
	}
	// innerSignature is ssh.Signature without the trailing fields of security-key
	// signatures, which no supported key type makes: Unmarshal refuses trailing bytes.
	innerSignature struct {
		Format string
		Blob   []byte
	}
	// toSign is what the key actually signs: the magic preamble, namespace, reserved,
	// hash algorithm and H(message).
	toSign struct {
		Magic         [len(magic)]byte
		Namespace     string
		Reserved      string
		HashAlgorithm string
		Hash          []byte
	}
)

// signedData returns the bytes the key signs for message in namespace.
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
	return ssh.Marshal(toSign{Magic: [len(magic)]byte([]byte(magic)), Namespace: namespace, HashAlgorithm: hashAlg, Hash: h}), nil
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
	var env envelope
	if err := ssh.Unmarshal(blob, &env); err != nil || string(env.Magic[:]) != magic || env.Version != sigVersion {
		return Signature{}, fmt.Errorf("%w: not an SSHSIG version 1 blob", ErrMalformed)
	}
	var eb envelopeBody
	if err := ssh.Unmarshal(env.Body, &eb); err != nil {
		return Signature{}, fmt.Errorf("%w: truncated or trailing data", ErrMalformed)
	}
	sig := Signature{Namespace: eb.Namespace, HashAlg: eb.HashAlgorithm}
	if sig.PublicKey, err = ParsePublicKey(eb.PublicKey); err != nil {
		return Signature{}, err
	}
	var inner innerSignature
	if err := ssh.Unmarshal(eb.Signature, &inner); err != nil {
		return Signature{}, fmt.Errorf("%w: inner signature", ErrMalformed)
	}
	sig.SigType, sig.Sig = inner.Format, inner.Blob
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
	// The key's Verify checks that the signature's format is the key's own algorithm.
	if err := sig.PublicKey.ssh.Verify(data, &ssh.Signature{Format: sig.SigType, Blob: sig.Sig}); err != nil {
		return PublicKey{}, ErrBadSignature
	}
	return sig.PublicKey, nil
}

// Sign signs message in namespace with s and returns the armored signature, which
// `ssh-keygen -Y verify -n namespace` accepts.
func Sign(s Signer, message []byte, namespace string) ([]byte, error) {
	if namespace == "" {
		return nil, errors.New("sshsig: empty namespace")
	}
	data, err := signedData(namespace, "sha512", message)
	if err != nil {
		return nil, err
	}
	sig, err := s.sign(data)
	if err != nil {
		return nil, err
	}
	body := envelopeBody{PublicKey: s.Public().Blob, Namespace: namespace, HashAlgorithm: "sha512",
		Signature: ssh.Marshal(innerSignature{Format: sig.Format, Blob: sig.Blob})}
	return armor(ssh.Marshal(envelope{Magic: [len(magic)]byte([]byte(magic)), Version: sigVersion, Body: ssh.Marshal(body)})), nil
}

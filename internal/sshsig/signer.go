package sshsig

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"time"
)

// Signer is a private SSH key able to make SSH signatures: a key file or an agent's key.
type Signer interface {
	rawSigner
}

// fileSigner is an unencrypted OpenSSH private key.
type fileSigner struct {
	pub PublicKey
	ed  ed25519.PrivateKey
	ec  *ecdsa.PrivateKey
}

func (s *fileSigner) Public() PublicKey { return s.pub }

func (s *fileSigner) signRaw(data []byte) (string, []byte, error) {
	if s.ed != nil {
		return TypeEd25519, ed25519.Sign(s.ed, data), nil
	}
	h := sha256.Sum256(data)
	r, sv, err := ecdsa.Sign(rand.Reader, s.ec, h[:])
	if err != nil {
		return "", nil, err
	}
	return TypeECDSAP256, appendString(appendString(nil, mpint(r)), mpint(sv)), nil
}

// mpint encodes a non-negative big integer as an SSH mpint.
func mpint(n *big.Int) []byte {
	b := n.Bytes()
	if len(b) > 0 && b[0]&0x80 != 0 {
		b = append([]byte{0}, b...)
	}
	return b
}

// LoadKeyFile reads an unencrypted OpenSSH private key (as made by `ssh-keygen -N ”`).
// A passphrase-protected key is refused: load it into ssh-agent and use the agent.
func LoadKeyFile(path string) (Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePrivateKey(b)
}

// ParsePrivateKey parses an unencrypted "OPENSSH PRIVATE KEY" PEM block.
func ParsePrivateKey(pemBytes []byte) (Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "OPENSSH PRIVATE KEY" {
		return nil, errors.New("not an OpenSSH private key (BEGIN OPENSSH PRIVATE KEY)")
	}
	const authMagic = "openssh-key-v1\x00"
	if !bytes.HasPrefix(block.Bytes, []byte(authMagic)) {
		return nil, errors.New("not an openssh-key-v1 private key")
	}
	r := &reader{b: block.Bytes[len(authMagic):]}
	cipher, kdf := string(r.string()), string(r.string())
	_ = r.string() // kdf options
	if r.uint32() != 1 {
		return nil, errors.New("OpenSSH key files with several keys are not supported")
	}
	_ = r.string() // public key
	priv := r.string()
	if r.err != nil {
		return nil, fmt.Errorf("OpenSSH private key: %v", r.err)
	}
	if cipher != "none" || kdf != "none" {
		return nil, errors.New("the key file is passphrase-protected; add it to ssh-agent (ssh-add) and use the agent instead")
	}
	pr := &reader{b: priv}
	if check1, check2 := pr.uint32(), pr.uint32(); check1 != check2 {
		return nil, errors.New("OpenSSH private key: check bytes differ (corrupt file)")
	}
	typ := string(pr.string())
	s := &fileSigner{}
	switch typ {
	case TypeEd25519:
		pub := pr.string()
		key := pr.string()
		if pr.err != nil || len(key) != ed25519.PrivateKeySize {
			return nil, errors.New("malformed ssh-ed25519 private key")
		}
		s.ed = ed25519.PrivateKey(bytes.Clone(key))
		var err error
		if s.pub, err = ParsePublicKey(appendString(appendString(nil, []byte(TypeEd25519)), pub)); err != nil {
			return nil, err
		}
	case TypeECDSAP256:
		curve, q, d := string(pr.string()), pr.string(), pr.string()
		if pr.err != nil || curve != "nistp256" {
			return nil, errors.New("malformed ecdsa-sha2-nistp256 private key")
		}
		var err error
		if s.pub, err = ParsePublicKey(appendString(appendString(appendString(nil, []byte(TypeECDSAP256)), []byte("nistp256")), q)); err != nil {
			return nil, err
		}
		if s.ec, err = ecdsa.ParseRawPrivateKey(elliptic.P256(), leftPad(d, 32)); err != nil {
			return nil, fmt.Errorf("ecdsa-sha2-nistp256 private key: %w", err)
		}
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, typ)
	}
	return s, nil
}

// agentSigner signs through an ssh-agent.
type agentSigner struct {
	sock string
	pub  PublicKey
}

func (s *agentSigner) Public() PublicKey { return s.pub }

const (
	agentRequestIdentities = 11
	agentIdentitiesAnswer  = 12
	agentSignRequest       = 13
	agentSignResponse      = 14
)

func agentCall(sock string, req []byte) ([]byte, error) {
	c, err := net.DialTimeout("unix", sock, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("ssh-agent: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second)) // a confirming agent may ask the user
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(req)))
	if _, err := c.Write(append(msg, req...)); err != nil {
		return nil, fmt.Errorf("ssh-agent: %v", err)
	}
	var n [4]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, fmt.Errorf("ssh-agent: %v", err)
	}
	size := binary.BigEndian.Uint32(n[:])
	if size == 0 || size > 256<<10 {
		return nil, errors.New("ssh-agent: bad reply length")
	}
	resp := make([]byte, size)
	if _, err := io.ReadFull(c, resp); err != nil {
		return nil, fmt.Errorf("ssh-agent: %v", err)
	}
	return resp, nil
}

// AgentSigner returns the key of the agent at sock whose public key is pub (an
// authorized_keys line, or "" for the agent's only supported key).
func AgentSigner(sock string, pub *PublicKey) (Signer, error) {
	if sock == "" {
		return nil, errors.New("no ssh-agent: SSH_AUTH_SOCK is not set")
	}
	resp, err := agentCall(sock, []byte{agentRequestIdentities})
	if err != nil {
		return nil, err
	}
	if resp[0] != agentIdentitiesAnswer {
		return nil, errors.New("ssh-agent refused to list keys")
	}
	r := &reader{b: resp[1:]}
	n := r.uint32()
	var found []PublicKey
	for i := uint32(0); i < n && r.err == nil; i++ {
		blob := r.string()
		_ = r.string() // comment
		if k, err := ParsePublicKey(blob); err == nil {
			if pub == nil || bytes.Equal(k.Blob, pub.Blob) {
				found = append(found, k)
			}
		}
	}
	switch {
	case len(found) == 0 && pub != nil:
		return nil, fmt.Errorf("ssh-agent does not hold key %s", pub.Fingerprint())
	case len(found) == 0:
		return nil, errors.New("ssh-agent holds no ssh-ed25519 or ecdsa-sha2-nistp256 key")
	case len(found) > 1:
		return nil, errors.New("ssh-agent holds several keys; say which with its public key")
	}
	return &agentSigner{sock: sock, pub: found[0]}, nil
}

func (s *agentSigner) signRaw(data []byte) (string, []byte, error) {
	req := []byte{agentSignRequest}
	req = appendString(req, s.pub.Blob)
	req = appendString(req, data)
	req = binary.BigEndian.AppendUint32(req, 0)
	resp, err := agentCall(s.sock, req)
	if err != nil {
		return "", nil, err
	}
	if resp[0] != agentSignResponse {
		return "", nil, errors.New("ssh-agent refused to sign")
	}
	r := &reader{b: resp[1:]}
	inner := r.string()
	ir := &reader{b: inner}
	typ, sig := string(ir.string()), ir.string()
	if r.err != nil || ir.err != nil {
		return "", nil, errors.New("ssh-agent: malformed signature")
	}
	return typ, bytes.Clone(sig), nil
}

// leftPad returns b as exactly n big-endian bytes: an SSH mpint may carry a leading zero byte
// or be shorter than the field.
func leftPad(b []byte, n int) []byte {
	b = bytes.TrimLeft(b, "\x00")
	if len(b) >= n {
		return b
	}
	out := make([]byte, n)
	copy(out[n-len(b):], b)
	return out
}

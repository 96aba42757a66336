package sshsig

import (
	"bytes"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// Signer is a private SSH key able to make SSH signatures: a key file or an agent's key.
type Signer interface {
	// Public returns the key's public half.
	Public() PublicKey
	// sign makes the inner signature over data with the key's own algorithm.
	sign(data []byte) (*ssh.Signature, error)
}

// keySigner is a supported key behind an ssh.Signer: a parsed key file, or agentKey.
type keySigner struct {
	pub PublicKey
	s   ssh.Signer
}

func (k *keySigner) Public() PublicKey { return k.pub }

// sign uses the key type's only algorithm: ssh-ed25519, or ecdsa-sha2-nistp256 over
// SHA-256. (An RSA key would need ssh.AlgorithmSigner and rsa-sha2-512 here, since plain
// Sign means SHA-1 ssh-rsa; RSA keys are refused before reaching this.)
func (k *keySigner) sign(data []byte) (*ssh.Signature, error) { return k.s.Sign(rand.Reader, data) }

func newKeySigner(s ssh.Signer) (*keySigner, error) {
	pub, err := fromSSH(s.PublicKey())
	if err != nil {
		return nil, err
	}
	return &keySigner{pub: pub, s: s}, nil
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

// ParsePrivateKey parses an unencrypted "OPENSSH PRIVATE KEY" PEM block. Other PEM key
// formats, which ssh.ParsePrivateKey would also read, are refused as before.
func ParsePrivateKey(pemBytes []byte) (Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "OPENSSH PRIVATE KEY" {
		return nil, errors.New("not an OpenSSH private key (BEGIN OPENSSH PRIVATE KEY)")
	}
	s, err := ssh.ParsePrivateKey(pemBytes)
	if _, ok := errors.AsType[*ssh.PassphraseMissingError](err); ok {
		return nil, errors.New("the key file is passphrase-protected; add it to ssh-agent (ssh-add) and use the agent instead")
	}
	if err != nil {
		return nil, fmt.Errorf("OpenSSH private key: %v", err)
	}
	return newKeySigner(s)
}

// The agent is dialled for each request, as the CLI makes one or two, and never kept
// open: agentDialTimeout bounds reaching it, agentCallTimeout one request (a confirming
// agent may ask the user first).
const (
	agentDialTimeout = 5 * time.Second
	agentCallTimeout = 60 * time.Second
)

// withAgent runs f against a fresh connection to the agent at sock.
func withAgent(sock string, f func(agent.ExtendedAgent) error) error {
	c, err := net.DialTimeout("unix", sock, agentDialTimeout)
	if err != nil {
		return fmt.Errorf("ssh-agent: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(agentCallTimeout))
	return f(agent.NewClient(c))
}

// agentKey is an ssh.Signer for one key held by the agent at sock.
type agentKey struct {
	sock string
	key  ssh.PublicKey
}

func (a agentKey) PublicKey() ssh.PublicKey { return a.key }

func (a agentKey) Sign(_ io.Reader, data []byte) (*ssh.Signature, error) {
	var sig *ssh.Signature
	err := withAgent(a.sock, func(c agent.ExtendedAgent) error {
		var err error
		if sig, err = c.Sign(a.key, data); err != nil {
			return fmt.Errorf("ssh-agent refused to sign: %v", err)
		}
		return nil
	})
	return sig, err
}

// AgentSigner returns the key of the agent at sock whose public key is pub (an
// authorized_keys line, or "" for the agent's only supported key).
func AgentSigner(sock string, pub *PublicKey) (Signer, error) {
	if sock == "" {
		return nil, errors.New("no ssh-agent: SSH_AUTH_SOCK is not set")
	}
	var keys []*agent.Key
	if err := withAgent(sock, func(c agent.ExtendedAgent) error {
		var err error
		if keys, err = c.List(); err != nil {
			return fmt.Errorf("ssh-agent refused to list keys: %v", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var found []PublicKey
	for _, k := range keys {
		if p, err := ParsePublicKey(k.Blob); err == nil {
			if pub == nil || bytes.Equal(p.Blob, pub.Blob) {
				found = append(found, p)
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
	return &keySigner{pub: found[0], s: agentKey{sock: sock, key: found[0].ssh}}, nil
}

// Package sshsig signs and verifies OpenSSH signatures (the SSHSIG format of OpenSSH's
// PROTOCOL.sshsig), so that a toolwarrant approval is a statement signed by a person's own
// SSH key and verifiable with `ssh-keygen -Y verify` from the statement and an
// allowed_signers file — without trusting toolwarrant or its database.
//
// The package holds only the SSHSIG envelope: the magic preamble, namespace and hash
// algorithm, the signed-data blob and the armor. Keys, signatures and the ssh-agent
// protocol are golang.org/x/crypto/ssh and its agent package.
//
// Keys: ssh-ed25519 and ecdsa-sha2-nistp256, parsed from authorized_keys lines; private
// keys from unencrypted OpenSSH key files or from an ssh-agent (SSH_AUTH_SOCK). Other key
// types, RSA among them, are refused with [ErrUnsupported]; encrypted key files are
// refused with a pointer to ssh-agent. Messages are hashed with SHA-512, as ssh-keygen
// does by default; SHA-256 signatures verify too.
package sshsig

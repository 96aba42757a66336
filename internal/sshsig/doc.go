// Package sshsig signs and verifies OpenSSH signatures (the SSHSIG format of OpenSSH's
// PROTOCOL.sshsig), so that a toolwarrant approval is a statement signed by a person's own
// SSH key and verifiable with `ssh-keygen -Y verify` from the statement and an
// allowed_signers file — without trusting toolwarrant or its database.
//
// Keys: ssh-ed25519 and ecdsa-sha2-nistp256, parsed from authorized_keys lines; private
// keys from unencrypted OpenSSH key files or from an ssh-agent (SSH_AUTH_SOCK). Encrypted
// key files are refused with a pointer to ssh-agent. Messages are hashed with SHA-512,
// as ssh-keygen does by default; SHA-256 signatures verify too. The package uses only the
// standard library, so that the approval path depends on nothing outside Go.
package sshsig

// Package trust is toolwarrant's operator trust list and the statements people sign:
// which SSH keys may approve, reject or roll back tool definitions, kept as signed records
// inside the audit chain, and the checks `audit verify` applies to every human decision
// against the trust list as it stood at that point of the chain.
//
// A statement is RFC 8785 canonical JSON, signed with OpenSSH's SSHSIG (internal/sshsig)
// in namespace "toolwarrant-approval" (decisions) or "toolwarrant-trust" (trust list
// changes). It names the audit head the signer read, so a signature cannot be replayed
// onto another state of the log, and `ssh-keygen -Y verify` can check it from the
// exported statement and an allowed_signers file.
//
// [Load] and [Replay] read the trust list back from the audit log as it stands at a head,
// and [State.Trusted] finds a signer's key on it. That is the one preamble of everything
// an operator signs. [SSHAttester] is how a decision is attested on one machine: the
// warrant.Attester that the decision use case (warrant.Service.DecideAs) takes from the
// CLI.
package trust

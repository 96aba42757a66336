// Package payment holds the pure rules of Padlock's pay-per-pad mode (LOCKER_MODE=txid,
// docs/spec/padlock-wire.md §4): the shape of a payment proof, the 402 challenge body and its
// WWW-Authenticate header, the formatting of token amounts, and the check of a transaction
// receipt against the operator's terms (a successful transaction carrying an ERC-20 Transfer
// log from the token contract to the payment wallet for at least the required amount).
//
// It performs no I/O: the receipt arrives as the raw JSON result of eth_getTransactionReceipt,
// fetched by internal/evmrpc, and the replay check lives in the store. The payment path's
// refusals are typed errors here (ErrInvalidProof, ErrUnconfigured, ErrUnreachable, a
// *Rejection, a *RequiredError for the challenge); the HTTP transport maps them to the
// wire's statuses. It imports only the standard library.
package payment

// Package evmrpc is a small Ethereum JSON-RPC 2.0 client over HTTP for the two calls the
// payment rail makes: eth_chainId and eth_getTransactionReceipt.
//
// Every call is bounded: a per-method timeout applied inside the client (5 s for a receipt,
// 2 s for the chain ID, so /health stays fast), a cap on the response size, and no redirects.
// Errors never carry the endpoint URL (RPC URLs often embed an API key) and are meant for
// logs only: a transport must answer any of them with its generic "rpc provider unreachable".
// Three sentinels classify them: ErrTransport, ErrMalformed, and *CallError for a JSON-RPC
// error object.
package evmrpc

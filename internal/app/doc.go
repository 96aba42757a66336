// Package app is the wiring agentgate's binaries share: configuration to services and
// transports, once. LockerHandler composes the Padlock service with its HTTP transport
// (httpapi) and, in txid mode, the payment rail (Payments: receipts over evmrpc, refusals
// as the typed errors httpapi maps). lockerd (over the SQLite store it opens) and the pads
// Lambda (over awsbase.PadStore) therefore serve the very same http.Handler.
//
// The adapters of each way to run are built in two subpackages, kept apart so that a
// binary links only what it runs on:
//
//   - localapp: one machine, no AWS account. It builds toolwarrant's SQLite catalog, its
//     log key file and the warrant service over them, for cmd/toolwarrant.
//   - awsapp: AWS. It builds the SDK configuration, DynamoDB, KMS, S3 and the toolwarrant
//     service over them, for the Lambda mains and toolwarrant's AWS modes.
//
// This package links neither SQLite nor the AWS SDK (the pads Lambda and lockerd both
// import it).
package app

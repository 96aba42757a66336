// Package localapp wires toolwarrant on one machine, the embedded way to run it with no
// AWS account. It opens one SQLite catalog file (sqlitestore) and the log key file that
// signs every audit entry (keysigner), and builds the warrant service over them. It is the
// local counterpart of awsapp.NewWarrant (DynamoDB, KMS, S3).
//
// cmd/toolwarrant builds every catalog, log key and service it uses here. The Lambda
// functions never import this package: they must not link SQLite or a local key
// (test/arch).
package localapp

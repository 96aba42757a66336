// Package storetest is the conformance suite of the locker.Store port. Every driver's test
// calls Run with a constructor of fresh, empty stores (SQLite in a temporary directory,
// DynamoDB on moto or LocalStack), so all drivers are held to one contract.
package storetest

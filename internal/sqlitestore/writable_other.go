//go:build !unix

package sqlitestore

// fileWritable assumes a file opened read-write stays writable where access(2) is missing.
func fileWritable(string) bool { return true }

//go:build unix

package sqlitestore

import "syscall"

// fileWritable reports whether this process may write the database file, without touching
// the writer connection (health must not interleave with writes).
func fileWritable(path string) bool { return syscall.Access(path, 2 /* W_OK */) == nil }

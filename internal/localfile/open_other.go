//go:build !unix

package localfile

import "os"

func openNoBlock(path string) (*os.File, error) { return os.Open(path) }

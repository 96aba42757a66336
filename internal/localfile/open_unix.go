//go:build unix

package localfile

import (
	"os"
	"syscall"
)

// openNoBlock opens path for reading without blocking: a FIFO opens at once (and is then
// refused as not regular), a device is not made the controlling terminal.
func openNoBlock(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
}

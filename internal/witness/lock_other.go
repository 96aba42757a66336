//go:build !unix

package witness

import (
	"errors"
	"os"
)

func tryLock(*os.File) error {
	return errors.New("the witness state needs file locks (flock), which this system lacks")
}

func unlock(*os.File) error { return nil }

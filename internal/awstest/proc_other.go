//go:build !linux

package awstest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }

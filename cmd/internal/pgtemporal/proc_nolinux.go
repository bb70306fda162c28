//go:build unix && !linux

package pgtemporal

import "syscall"

// setParentDeathSignal does nothing here: only Linux can kill a child when
// its parent dies, so elsewhere a server outlives a test killed before Stop.
func setParentDeathSignal(*syscall.SysProcAttr) {}

package procs

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// lookupUser returns the ids of name when the harness runs as root and name
// is set; ok is false when nothing needs to change.
func lookupUser(name string) (uid, gid int, ok bool, err error) {
	if name == "" || os.Geteuid() != 0 {
		return 0, 0, false, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, false, fmt.Errorf("user %s: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return 0, 0, false, fmt.Errorf("user %s: ids %s:%s are not numbers", name, u.Uid, u.Gid)
	}
	return uid, gid, true, nil
}

// asUser makes cmd run as name when the harness is root.
func asUser(cmd *exec.Cmd, name string) error {
	uid, gid, ok, err := lookupUser(name)
	if err != nil || !ok {
		return err
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return nil
}

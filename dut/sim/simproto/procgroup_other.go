//go:build !unix

package simproto

import "os/exec"

// ownGroup leaves cmd as it is: without Unix process groups, stopping
// the shell (killGroup) is all that can be done.
func ownGroup(*exec.Cmd) {}

// killGroup kills cmd's process.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

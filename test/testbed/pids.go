package testbed

import (
	"path/filepath"
)

// pid returns the process id of the daemon's current process, 0 when none
// runs.
func (d *daemon) pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cmd == nil || d.cmd.Process == nil || isClosed(d.done) {
		return 0
	}
	return d.cmd.Process.Pid
}

// NetpluginPid is the process id of the host's running netplugin (0 when
// it is not running), e.g. to read its memory use from /proc.
func (h *Host) NetpluginPid() int { return h.netplugin.pid() }

// Pid is the process id of the running netmaster (0 when it is not
// running).
func (m *Master) Pid() int { return m.proc.pid() }

// EtcdDir is the embedded etcd's data folder of the master (it exists
// only with the Embedded store).
func (m *Master) EtcdDir() string { return filepath.Join(m.Dir, "etcd") }

package netctl

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// logError writes one error record on stderr in the format of the
// original's log library (docs/netctl.md §4): a logfmt line when stderr is not a
// terminal, a coloured line when it is. Unlike the original, the message is
// always a single line: trailing line breaks (server bodies end in "\n")
// are dropped, and of a multi-line message (a server stack trace) only the
// first line is kept.
func (n *Netctl) logError(msg string) {
	msg = oneLine(msg)
	now := n.opts.Now()
	if n.opts.StderrIsTerminal() {
		secs := int(now.Sub(n.start).Seconds())
		fmt.Fprintf(n.opts.Stderr, "\x1b[31mERRO\x1b[0m[%04d] %-44s \n", secs, msg)
		return
	}
	fmt.Fprintf(n.opts.Stderr, "time=\"%s\" level=error msg=%s \n", now.Format("2006-01-02T15:04:05Z07:00"), quoteValue(msg))
}

func oneLine(msg string) string {
	msg = strings.TrimRight(msg, "\r\n")
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimRight(msg[:i], "\r")
	}
	return msg
}

// quoteValue wraps s in double quotes (without escaping, as the original)
// unless it consists only of ASCII letters, digits, '-' and '.'.
func quoteValue(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return `"` + s + `"`
		}
	}
	return s
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// readPasswordFromTerminal reads a line from fd 0 with echo disabled. It
// fails with ENOTTY ("inappropriate ioctl for device") when stdin is not a
// terminal.
func readPasswordFromTerminal() (string, error) {
	const fd = 0
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", err
	}
	noEcho := *old
	noEcho.Lflag &^= unix.ECHO
	noEcho.Lflag |= unix.ICANON | unix.ISIG
	noEcho.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &noEcho); err != nil {
		return "", err
	}
	defer func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }()
	var buf []byte
	b := make([]byte, 1)
	for {
		k, err := unix.Read(fd, b)
		if k == 1 {
			if b[0] == '\n' || b[0] == '\r' {
				break
			}
			buf = append(buf, b[0])
			continue
		}
		if err != nil {
			return "", err
		}
		if k == 0 {
			if len(buf) == 0 {
				return "", io.EOF
			}
			break
		}
	}
	return string(buf), nil
}

func insecureTLSConfig() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // --insecure asks for exactly this
}

package cniapi

import (
	"bufio"
	"bytes"
	"net/textproto"
	"testing"
)

// FuzzReadAnswer feeds arbitrary bytes to the client's reading of the
// server's answer (status line, header, body framed by length, chunks or
// the end): it never panics, never keeps more than MaxBodyBytes, and
// reads a well-framed answer's body exactly. Seeds:
// testdata/fuzz/FuzzReadAnswer.
func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"))
	f.Add([]byte("HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 404 Not Found\r\n\r\nno such endpoint"))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffff\r\nab"))
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		tp := textproto.NewReader(br)
		line, err := tp.ReadLine()
		if err != nil {
			return
		}
		status, err := parseStatusLine(line)
		if err != nil {
			return
		}
		if status < 100 || status > 999 {
			t.Fatalf("status %d from %q", status, line)
		}
		hdr, err := tp.ReadMIMEHeader()
		if err != nil {
			return
		}
		body, err := readBody(br, hdr)
		if err != nil {
			return
		}
		if int64(len(body)) > MaxBodyBytes {
			t.Fatalf("kept %d bytes, more than %d", len(body), MaxBodyBytes)
		}
	})
}

// TestReadAnswerFraming: the body of each framing is read exactly.
func TestReadAnswerFraming(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Content-Length: 5\r\n\r\nhello and more", "hello"},
		{"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;x=y\r\n!\r\n0\r\n\r\n", "hello!"},
		{"\r\nto the end", "to the end"},
	} {
		br := bufio.NewReader(bytes.NewReader([]byte(c.in)))
		hdr, err := textproto.NewReader(br).ReadMIMEHeader()
		if err != nil {
			t.Fatalf("%q: header: %v", c.in, err)
		}
		got, err := readBody(br, hdr)
		if err != nil || string(got) != c.want {
			t.Errorf("%q: got %q %v, want %q", c.in, got, err, c.want)
		}
	}
}

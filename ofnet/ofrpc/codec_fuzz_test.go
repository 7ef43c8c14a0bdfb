package ofrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzMsgReader: the request framer never panics, never returns more than
// its bound, returns only '{'…'}' spans of its input, and returns a valid
// JSON object within the bound exactly.
func FuzzMsgReader(f *testing.F) {
	for _, s := range []string{
		`{"method":"OfnetMaster.RegisterNode","params":[{"HostAddr":"198.18.0.1","HostPort":9002}],"id":0}`,
		`{"a":"}\"{[","b":[1,2.5e3,-0,true,false,null]} {"c":{}}` + "\n",
		`{"s":"\\\\"}{"t":"\u00e9\\u0041"}`,
		`{not json`,
		`[1,2]`,
		`{"a":[}`,
		`{"x":"` + string(bytes.Repeat([]byte("y"), 300)) + `"}`,
		" \t\r\n",
		"",
	} {
		f.Add([]byte(s))
	}
	const max = 256
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newMsgReader(bytes.NewReader(data), max)
		total := 0
		for i := 0; ; i++ {
			msg, err := m.next()
			if err != nil {
				if i == 0 && json.Valid(data) && len(bytes.TrimSpace(data)) > 0 && len(bytes.TrimSpace(data)) <= max &&
					bytes.TrimSpace(data)[0] == '{' {
					t.Fatalf("valid object %q refused: %v", data, err)
				}
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) &&
					!errors.Is(err, ErrMessageTooLarge) && !errors.Is(err, ErrMalformed) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(msg) > max || len(msg) < 2 || msg[0] != '{' || msg[len(msg)-1] != '}' {
				t.Fatalf("message %q out of shape", msg)
			}
			total += len(msg)
			if total > len(data) || !bytes.Contains(data, msg) {
				t.Fatalf("message %q is not from the input %q", msg, data)
			}
			if i == 0 && json.Valid(data) {
				if want := bytes.TrimSpace(data); !bytes.Equal(msg, want) {
					t.Fatalf("valid object %q framed as %q", want, msg)
				}
			}
		}
	})
}
